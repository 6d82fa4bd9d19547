// The generator's long loops over every core. Each index's work depends only
// on the index, and the ranges are joined in a fixed order, so the bytes
// written never depend on how many threads ran them (same options, same bytes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace datagen {

// --threads; 0 (the default) = every core this process may use.
void set_worker_threads(int threads);
int worker_threads();

// Calls f(begin, end) on disjoint ranges covering [0, n), one range a thread.
// f must not throw.
template <class F>
void parallel_for(std::int64_t n, F&& f) {
    const std::int64_t threads = std::min<std::int64_t>(worker_threads(), n);
    if (threads <= 1) {
        if (n > 0) f(std::int64_t{0}, n);
        return;
    }
    std::vector<std::thread> others;
    for (std::int64_t t = 1; t < threads; ++t) others.emplace_back([&f, n, t, threads] { f(n * t / threads, n * (t + 1) / threads); });
    f(std::int64_t{0}, n / threads);
    for (std::thread& t : others) t.join();
}

}  // namespace datagen
