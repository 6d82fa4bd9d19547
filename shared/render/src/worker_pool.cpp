#include "slabcast/render/worker_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace slabcast::render {

WorkerPool::WorkerPool(int threads) {
    for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back(&WorkerPool::work, this, i);
}

WorkerPool::~WorkerPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

int WorkerPool::default_threads() {
    const auto number = [](const char* name) -> long {
        const char* text = std::getenv(name);
        if (!text || !*text) return 0;
        char* end = nullptr;
        const long n = std::strtol(text, &end, 10);
        return *end == '\0' && n >= 1 && n <= 256 ? n : 0;
    };
    if (const long n = number("SLABCAST_RENDER_THREADS")) return static_cast<int>(n);
    const long cores = std::max(1u, std::thread::hardware_concurrency());
    long ranks = number("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!ranks) ranks = number("MPI_LOCALNRANKS");
    return static_cast<int>(std::max(1L, cores / std::max(1L, ranks)));
}

void WorkerPool::run_calls(std::int64_t count, void* task, Call call) {
    if (count <= 0) return;
    {
        std::lock_guard lock(mutex_);
        task_ = task;
        call_ = call;
        count_ = count;
        next_ = 0;
        busy_ = static_cast<int>(workers_.size());
        ++round_;
    }
    wake_.notify_all();
    take_tasks(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
}

void WorkerPool::take_tasks(int thread) {
    for (;;) {
        std::int64_t i;
        {
            std::lock_guard lock(mutex_);
            if (next_ >= count_) return;
            i = next_++;
        }
        call_(task_, i, thread);
    }
}

void WorkerPool::work(int thread) {
    std::uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || round_ != seen; });
            if (stopping_) return;
            seen = round_;
        }
        take_tasks(thread);
        {
            std::lock_guard lock(mutex_);
            --busy_;
        }
        done_.notify_all();
    }
}

}  // namespace slabcast::render
