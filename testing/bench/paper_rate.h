// The counters of the benchmarks that cost work by the byte (a code, a tag, a
// receiver's path): its GB/s, and the share of one core it takes to keep up
// with one stream of the paper's 2.81 Gbit/s (Balman et al., 2012, section 4).
#pragma once

#include <benchmark/benchmark.h>

namespace slabcast::bench {

constexpr double kPaperStreamBytesPerSecond = 2.81e9 / 8;

// `bytes_an_iteration` counted as `rate_name` (GB/s) and core_at_2.81G.
inline void count_bytes(benchmark::State& state, double bytes_an_iteration, const char* rate_name) {
    const double bytes = static_cast<double>(state.iterations()) * bytes_an_iteration;
    state.counters[rate_name] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
    state.counters["core_at_2.81G"] = benchmark::Counter(bytes / kPaperStreamBytesPerSecond,
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace slabcast::bench
