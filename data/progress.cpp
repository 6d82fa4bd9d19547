#include "progress.h"
#include "parallel.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace datagen {
namespace {
int g_threads = 0;
}

void set_worker_threads(int threads) { g_threads = threads; }

int worker_threads() {
    if (g_threads > 0) return g_threads;
    return std::max(1u, std::thread::hardware_concurrency());
}

Progress::Progress(std::string label, std::int64_t total)
    : label_(std::move(label)), total_(std::max<std::int64_t>(total, 1)), tty_(::isatty(STDOUT_FILENO) == 1) {
    drawer_ = std::thread([this] {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; })) draw(false);
    });
}

Progress::~Progress() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    drawer_.join();
    draw(true);
}

void Progress::draw(bool last) {
    const std::int64_t done = last ? total_ : std::min(done_.load(std::memory_order_relaxed), total_);
    const int percent = static_cast<int>(100 * done / total_);
    if (tty_) {
        constexpr int kWidth = 30;
        const int filled = kWidth * percent / 100;
        std::printf("\r%-28s [%s%s] %3d%%%s", label_.c_str(), std::string(filled, '#').c_str(),
                    std::string(kWidth - filled, '.').c_str(), percent, last ? "\n" : "");
    } else {
        if (percent / 10 == last_tenth_ && !last) return;
        if (last && last_tenth_ == 10) return;
        last_tenth_ = percent / 10;
        std::printf("%s: %d%%\n", label_.c_str(), percent);
    }
    std::fflush(stdout);
}

}  // namespace datagen
