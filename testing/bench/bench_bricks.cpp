// What measuring a new step's bricks costs the CPU ray marcher (issue 57): a
// full-resolution frame of a new step reads every value of the rank's piece
// once to find the bricks it may skip (slabcast/render/brick_grid.h), before
// it marches. The peer does the least such a pass can: the range of the same
// values in one sweep (slabcast/value_range.h's min_max, four at a time),
// what a pass bound by memory alone costs. One core; a 1024 x 1024 x 256
// piece (1 GiB): at the SC11 size, 1024^3 (Balman et al., 2012, section 4),
// each of two ranks measures twice this. Counter: GB_per_s of values.
//
//   build/testing/bench_bricks
#include "slabcast/render/brick_grid.h"
#include "slabcast/value_range.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr std::int64_t kNx = 1024, kNy = 1024, kNz = 256;

const std::vector<float>& piece() {
    static const std::vector<float> values = [] {
        std::vector<float> v(static_cast<std::size_t>(kNx * kNy * kNz));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = 100.0f * std::sin(0.001f * static_cast<float>(i));
        return v;
    }();
    return values;
}

void report(benchmark::State& state) {
    const double bytes = static_cast<double>(state.iterations()) * static_cast<double>(piece().size() * sizeof(float));
    state.counters["GB_per_s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
}

void BM_measure_bricks(benchmark::State& state) {
    const std::vector<float>& v = piece();
    slabcast::render::BrickGrid grid;
    grid.resize(kNx, kNy, kNz);
    for (auto _ : state) {
        grid.measure(v.data(), 0, grid.bricks_z());
        benchmark::DoNotOptimize(grid.least(0));
    }
    report(state);
}

void BM_value_range(benchmark::State& state) {
    const std::vector<float>& v = piece();
    for (auto _ : state) benchmark::DoNotOptimize(slabcast::min_max(v.data(), v.size()));
    report(state);
}

}  // namespace

BENCHMARK(BM_measure_bricks)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_value_range)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_MAIN();
