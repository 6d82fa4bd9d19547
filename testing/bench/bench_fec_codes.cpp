// Reed-Solomon codes for groups of datagrams (issue 58), on this machine, one
// core: slabcast's (slabcast/erasure_code.h, ISA-L's Cauchy code) against
// cm256cc (Cauchy, its own GF(2^8) kernels) and jerasure 2 (Cauchy "good"
// matrices as XOR schedules, and Vandermonde matrices through gf-complete),
// encoding the same k data shards of 8960 bytes (a full run packet and its
// FEC shim) into m parity shards, and rebuilding lost data shards from what
// is left. Counters: data_GBps is the group's data bytes (k shards) a second;
// core_at_2.81G the share of one core it costs to keep up with one stream of
// the paper's 2.81 Gbit/s (Balman et al., 2012, section 4).
//
//   build/testing/bench_fec_codes [--benchmark_filter=...]
#include "paper_rate.h"
#include "slabcast/erasure_code.h"

#include <benchmark/benchmark.h>
#include <cm256cc/cm256.h>
#include <jerasure.h>
#include <jerasure/cauchy.h>
#include <jerasure/reed_sol.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

constexpr std::size_t kShard = 8960;  // a multiple of 8 x 8 x 8 (jerasure's w x packet size x word)

struct Group {
    int k, m;
    std::vector<std::vector<std::uint8_t>> shards;  // k data, then m parity
    std::vector<std::uint8_t*> pointers;
    Group(int k_, int m_) : k(k_), m(m_), shards(static_cast<std::size_t>(k_ + m_), std::vector<std::uint8_t>(kShard)) {
        std::mt19937 random(7);
        for (int i = 0; i < k; ++i)
            for (auto& b : shards[static_cast<std::size_t>(i)]) b = static_cast<std::uint8_t>(random());
        for (auto& s : shards) pointers.push_back(s.data());
    }
    std::uint8_t** data() { return pointers.data(); }
    std::uint8_t** parity() { return pointers.data() + k; }
};

void report(benchmark::State& state, int k) {
    const double bytes = static_cast<double>(state.iterations()) * k * kShard;
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    slabcast::bench::count_bytes(state, static_cast<double>(k) * kShard, "data_GBps");
}

// The data shards lost: `lost` of them, spread through the group.
std::vector<int> lost_shards(int k, int lost) {
    std::vector<int> out;
    for (int i = 0; i < lost; ++i) out.push_back(static_cast<int>((static_cast<long>(i) * k) / lost));
    return out;
}

int lost_of(benchmark::State& state) { return static_cast<int>(state.range(2)); }

// ---- slabcast (ISA-L) ----
void BM_slabcast_encode(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    slabcast::fec::ErasureCode code(k, m);
    for (auto _ : state) {
        code.encode(g.data(), kShard, g.parity());
        benchmark::DoNotOptimize(g.shards.back().data());
    }
    report(state, k);
}

// As the sender adds each datagram to its group's parity when it leaves.
void BM_slabcast_encode_streaming(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    slabcast::fec::ErasureCode code(k, m);
    for (auto _ : state) {
        for (int p = 0; p < m; ++p) std::fill(g.shards[static_cast<std::size_t>(k + p)].begin(), g.shards[static_cast<std::size_t>(k + p)].end(), 0);
        for (int i = 0; i < k; ++i) code.add(i, g.shards[static_cast<std::size_t>(i)].data(), kShard, g.parity());
        benchmark::DoNotOptimize(g.shards.back().data());
    }
    report(state, k);
}

void BM_slabcast_rebuild(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    slabcast::fec::ErasureCode code(k, m);
    code.encode(g.data(), kShard, g.parity());
    std::vector<const std::uint8_t*> present(g.pointers.begin(), g.pointers.end());
    std::vector<std::vector<std::uint8_t>> out(static_cast<std::size_t>(k), std::vector<std::uint8_t>(kShard));
    std::vector<std::uint8_t*> out_pointers;
    for (auto& o : out) out_pointers.push_back(o.data());
    for (int i : lost_shards(k, lost_of(state))) present[static_cast<std::size_t>(i)] = nullptr;
    for (auto _ : state) {
        if (!code.rebuild(present.data(), kShard, out_pointers.data())) state.SkipWithError("not rebuilt");
        benchmark::DoNotOptimize(out.front().data());
    }
    report(state, k);
}

// ---- cm256cc ----
// The group's data shards as cm256cc's original blocks, each named by its index.
std::vector<CM256::cm256_block> originals(Group& g) {
    std::vector<CM256::cm256_block> blocks(static_cast<std::size_t>(g.k));
    for (int i = 0; i < g.k; ++i) blocks[static_cast<std::size_t>(i)] = {g.pointers[static_cast<std::size_t>(i)], static_cast<unsigned char>(i)};
    return blocks;
}

void BM_cm256cc_encode(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    CM256 cm;
    if (!cm.isInitialized()) {
        state.SkipWithError("cm256cc did not initialise");
        return;
    }
    CM256::cm256_encoder_params params{k, m, static_cast<int>(kShard)};
    std::vector<CM256::cm256_block> blocks = originals(g);
    std::vector<std::uint8_t> recovery(static_cast<std::size_t>(m) * kShard);
    for (auto _ : state) {
        if (cm.cm256_encode(params, blocks.data(), recovery.data()) != 0) state.SkipWithError("cm256_encode failed");
        benchmark::DoNotOptimize(recovery.data());
    }
    report(state, k);
}

void BM_cm256cc_rebuild(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    CM256 cm;
    CM256::cm256_encoder_params params{k, m, static_cast<int>(kShard)};
    std::vector<CM256::cm256_block> blocks = originals(g);
    std::vector<std::uint8_t> recovery(static_cast<std::size_t>(m) * kShard);
    cm.cm256_encode(params, blocks.data(), recovery.data());
    const std::vector<int> lost = lost_shards(k, lost_of(state));
    std::vector<std::uint8_t> work(static_cast<std::size_t>(k) * kShard);
    for (auto _ : state) {
        // cm256_decode works in place: the lost originals' slots hold recovery blocks, rewritten each time.
        state.PauseTiming();
        for (int i = 0; i < k; ++i) {
            std::copy(g.shards[static_cast<std::size_t>(i)].begin(), g.shards[static_cast<std::size_t>(i)].end(), work.begin() + static_cast<long>(i) * static_cast<long>(kShard));
            blocks[static_cast<std::size_t>(i)] = {work.data() + static_cast<std::size_t>(i) * kShard, static_cast<unsigned char>(i)};
        }
        for (std::size_t r = 0; r < lost.size(); ++r) {
            std::uint8_t* slot = work.data() + static_cast<std::size_t>(lost[r]) * kShard;
            std::copy(recovery.begin() + static_cast<long>(r * kShard), recovery.begin() + static_cast<long>((r + 1) * kShard), slot);
            blocks[static_cast<std::size_t>(lost[r])] = {slot, static_cast<unsigned char>(k + static_cast<int>(r))};
        }
        state.ResumeTiming();
        if (cm.cm256_decode(params, blocks.data()) != 0) state.SkipWithError("cm256_decode failed");
        benchmark::DoNotOptimize(work.data());
    }
    report(state, k);
}

// ---- jerasure 2 ----
constexpr int kW = 8, kPacket = static_cast<int>(kShard / kW);

// jerasure's "good" Cauchy matrix for k+m as a bit matrix and its XOR schedule, freed with it.
struct CauchySchedule {
    int* matrix;
    int* bitmatrix;
    int** schedule;
    CauchySchedule(int k, int m)
        : matrix(cauchy_good_general_coding_matrix(k, m, kW)), bitmatrix(jerasure_matrix_to_bitmatrix(k, m, kW, matrix)),
          schedule(jerasure_smart_bitmatrix_to_schedule(k, m, kW, bitmatrix)) {}
    CauchySchedule(const CauchySchedule&) = delete;
    CauchySchedule& operator=(const CauchySchedule&) = delete;
    ~CauchySchedule() {
        jerasure_free_schedule(schedule);
        std::free(bitmatrix);
        std::free(matrix);
    }
};

void BM_jerasure_cauchy_encode(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    const CauchySchedule cauchy(k, m);
    for (auto _ : state) {
        jerasure_schedule_encode(k, m, kW, cauchy.schedule, reinterpret_cast<char**>(g.data()), reinterpret_cast<char**>(g.parity()),
                                 static_cast<int>(kShard), kPacket);
        benchmark::DoNotOptimize(g.shards.back().data());
    }
    report(state, k);
}

void BM_jerasure_cauchy_rebuild(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    const CauchySchedule cauchy(k, m);
    jerasure_schedule_encode(k, m, kW, cauchy.schedule, reinterpret_cast<char**>(g.data()), reinterpret_cast<char**>(g.parity()),
                             static_cast<int>(kShard), kPacket);
    std::vector<int> erasures = lost_shards(k, lost_of(state));
    erasures.push_back(-1);
    for (auto _ : state) {
        if (jerasure_schedule_decode_lazy(k, m, kW, cauchy.bitmatrix, erasures.data(), reinterpret_cast<char**>(g.data()),
                                          reinterpret_cast<char**>(g.parity()), static_cast<int>(kShard), kPacket, 1) != 0)
            state.SkipWithError("jerasure decode failed");
        benchmark::DoNotOptimize(g.shards.front().data());
    }
    report(state, k);
}

void BM_jerasure_vandermonde_encode(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Group g(k, m);
    int* matrix = reed_sol_vandermonde_coding_matrix(k, m, kW);
    for (auto _ : state) {
        jerasure_matrix_encode(k, m, kW, matrix, reinterpret_cast<char**>(g.data()), reinterpret_cast<char**>(g.parity()),
                               static_cast<int>(kShard));
        benchmark::DoNotOptimize(g.shards.back().data());
    }
    std::free(matrix);
    report(state, k);
}

// k+m: small groups as a datagram stream would send them quickly, and large
// ones where a few parity datagrams cover many (the loss the paper saw, 5%,
// needs about 10% parity over groups of 200 to leave under 1% of steps with a
// hole). The third argument is the data shards rebuilt (encoders ignore it).
void codes(benchmark::internal::Benchmark* b) {
    for (auto km : {std::pair{16, 2}, {32, 4}, {64, 8}, {100, 12}, {200, 22}, {236, 11}, {220, 28}, {220, 34}})
        b->Args({km.first, km.second, std::max(1, km.first / 20)});
}
void losses(benchmark::internal::Benchmark* b) {
    for (auto km : {std::pair{32, 4}, {100, 12}, {200, 22}, {220, 28}}) {
        b->Args({km.first, km.second, 1});
        b->Args({km.first, km.second, std::max(1, km.first / 20)});
        b->Args({km.first, km.second, km.second});
    }
}

}  // namespace

BENCHMARK(BM_slabcast_encode)->Apply(codes);
BENCHMARK(BM_slabcast_encode_streaming)->Apply(codes);
BENCHMARK(BM_cm256cc_encode)->Apply(codes);
BENCHMARK(BM_jerasure_cauchy_encode)->Apply(codes);
BENCHMARK(BM_jerasure_vandermonde_encode)->Apply(codes);
BENCHMARK(BM_slabcast_rebuild)->Apply(losses);
BENCHMARK(BM_cm256cc_rebuild)->Apply(losses);
BENCHMARK(BM_jerasure_cauchy_rebuild)->Apply(losses);
BENCHMARK_MAIN();
