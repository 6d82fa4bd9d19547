// Threads started once and kept for the renderer's life: each frame hands
// them its tiles, so no thread is started and nothing is allocated per frame.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace slabcast::render {

class WorkerPool {
public:
    // `threads` in all, the calling thread included (at least 1).
    explicit WorkerPool(int threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    int threads() const { return static_cast<int>(workers_.size()) + 1; }

    // Calls task(i, thread) for every i in [0, count), each once, spread over
    // the threads (thread in [0, threads())); returns when all are done.
    template <class Task>
    void run(std::int64_t count, Task& task) {
        run_calls(count, &task, [](void* t, std::int64_t i, int thread) { (*static_cast<Task*>(t))(i, thread); });
    }

    // SLABCAST_RENDER_THREADS where set (1..256), else this host's cores
    // shared among the MPI ranks on it (Open MPI's and MPICH's local size).
    static int default_threads();

private:
    using Call = void (*)(void*, std::int64_t, int);
    void run_calls(std::int64_t count, void* task, Call call);
    void take_tasks(int thread);
    void work(int thread);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::uint64_t round_ = 0;
    int busy_ = 0;
    bool stopping_ = false;
    // The round in progress.
    void* task_ = nullptr;
    Call call_ = nullptr;
    std::int64_t count_ = 0, next_ = 0;
};

}  // namespace slabcast::render
