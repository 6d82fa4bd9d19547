// A progress bar for the generator's long phases (a 1024^3 step takes about a
// minute): redrawn in place on a terminal, one line per 10% otherwise, so that
// `slabcast demo`'s first run shows where it is and a log stays short.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace datagen {

class Progress {
public:
    Progress(std::string label, std::int64_t total);
    ~Progress();  // draws 100% and ends the line
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    void advance(std::int64_t n = 1) { done_.fetch_add(n, std::memory_order_relaxed); }

private:
    void draw(bool last);
    std::string label_;
    std::int64_t total_;
    std::atomic<std::int64_t> done_{0};
    bool tty_;
    int last_tenth_ = -1;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread drawer_;
};

}  // namespace datagen
