// What forward error correction costs a receiving core (issue 58), the way the
// receiver meets it: a step of FEC datagrams as the sender sent them
// (slabcast/fec_sender.h), a share of them lost at random, through
// GroupReceiver (slabcast/fec_receiver.h), each datagram handed on copied into
// a 64 MiB slab as placing it would; against the peer doing the same work
// without FEC: the same data datagrams, the same ones lost, copied into the
// same slab. The difference is FEC's: keeping each datagram for its group and
// rebuilding the lost ones, from shards that have left the cache by then.
// Counters: data_GBps (the data datagrams' bytes a second) and core_at_2.81G
// (the share of one core that keeps up with one stream of the paper's
// 2.81 Gbit/s: Balman et al., 2012, section 4).
//
//   build/testing/bench_fec_receiver [--benchmark_filter=...]
#include "paper_rate.h"
#include "slabcast/fec_receiver.h"
#include "slabcast/fec_sender.h"
#include "slabcast/run_packet.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr std::size_t kSlabBytes = std::size_t{64} << 20;
constexpr int kGroupsAStep = 64;

// One step's datagrams as they left (data with its shim, parity between),
// those that arrive marked; data_bytes counts every data datagram sent.
struct Step {
    std::vector<std::vector<std::uint8_t>> datagrams;
    std::vector<bool> data, arrives;
    double data_bytes = 0;
    std::uint32_t groups = 0;
};

Step make_step(int k, int m, int depth, double loss) {
    Step s;
    slabcast::fec::GroupSender sender(k, m, depth);
    std::mt19937 random(11);
    std::bernoulli_distribution lost(loss);
    const std::size_t inner = slabcast::fec::kMaxShardBytes;
    const auto keep = [&](const std::uint8_t* bytes, std::size_t length, bool data) {
        s.datagrams.emplace_back(bytes, bytes + length);
        s.data.push_back(data);
        s.arrives.push_back(!lost(random));
    };
    std::vector<std::uint8_t> datagram(slabcast::fec::kDataHeaderBytes + inner);
    const auto add_parity = [&](const std::vector<slabcast::fec::ParityDatagram>& parity) {
        for (const auto& p : parity) keep(p.bytes, p.length, false);
    };
    for (int i = 0; i < k * kGroupsAStep; ++i) {
        // A full run packet: what the rebuilt shard's own header says it is.
        std::uint8_t* packet = datagram.data() + slabcast::fec::kDataHeaderBytes;
        for (std::size_t b = 0; b + 4 <= inner; b += 4) {
            const std::uint32_t word = random();
            std::memcpy(packet + b, &word, 4);
        }
        const std::int32_t magic = slabcast::run::kMagic;
        const auto payload = static_cast<std::uint32_t>(inner - slabcast::run::kHeaderBytes);
        std::memcpy(packet, &magic, 4);
        std::memcpy(packet + 32, &payload, 4);
        const auto& parity = sender.add(datagram.data(), packet, inner);
        keep(datagram.data(), datagram.size(), true);
        s.data_bytes += static_cast<double>(inner);
        add_parity(parity);
    }
    add_parity(sender.flush());
    s.groups = static_cast<std::uint32_t>(sender.groups_closed());
    return s;
}

void report(benchmark::State& state, double bytes_a_step) {
    const double bytes = static_cast<double>(state.iterations()) * bytes_a_step;
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    slabcast::bench::count_bytes(state, bytes_a_step, "data_GBps");
}

// Copies what is handed on into the slab, one place after another, as
// placing a run packet's values would write them.
struct Slab {
    std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kSlabBytes, 1);
    std::size_t at = 0;
    void place(const std::uint8_t* datagram, std::size_t length) {
        if (at + length > bytes.size()) at = 0;
        std::memcpy(bytes.data() + at, datagram, length);
        at += length;
    }
};

double loss_of(const benchmark::State& state) { return static_cast<double>(state.range(3)) / 1000.0; }

// Arguments: k, m, depth, loss in thousandths.
void BM_fec_receiver(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    Step step = make_step(k, m, static_cast<int>(state.range(2)), loss_of(state));
    // The receiver's own window (receive's --fec-window default).
    slabcast::fec::GroupReceiver receiver(16, k + m);
    Slab slab;
    const slabcast::fec::GroupReceiver::Deliver deliver = [&](const std::uint8_t* d, std::size_t n) { slab.place(d, n); };
    std::uint32_t offset = 0;
    for (auto _ : state) {
        for (std::size_t i = 0; i < step.datagrams.size(); ++i) {
            if (!step.arrives[i]) continue;
            std::uint8_t* d = step.datagrams[i].data();
            // Each step's groups numbered after the last's: the group field, bytes 8..11.
            std::uint32_t group = 0;
            std::memcpy(&group, d + 8, 4);
            group += offset;
            std::memcpy(d + 8, &group, 4);
            receiver.accept(d, step.datagrams[i].size(), deliver);
            group -= offset;
            std::memcpy(d + 8, &group, 4);
        }
        offset += step.groups;
    }
    receiver.finish();
    const auto& c = receiver.counts();
    if (c.unrepaired > 0 || c.malformed > 0) state.SkipWithError("datagrams lost beyond repair: give the code more parity");
    state.counters["repaired_a_step"] = static_cast<double>(c.repaired) / static_cast<double>(state.iterations());
    report(state, step.data_bytes);
}

// The peer: the same data datagrams, without their shims, the same ones lost.
void BM_no_fec(benchmark::State& state) {
    const int k = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
    const Step step = make_step(k, m, static_cast<int>(state.range(2)), loss_of(state));
    Slab slab;
    for (auto _ : state) {
        for (std::size_t i = 0; i < step.datagrams.size(); ++i)
            if (step.data[i] && step.arrives[i])
                slab.place(step.datagrams[i].data() + slabcast::fec::kDataHeaderBytes,
                           step.datagrams[i].size() - slabcast::fec::kDataHeaderBytes);
        benchmark::DoNotOptimize(slab.bytes.data());
    }
    report(state, step.data_bytes);
}

// The codes fec_wan.py runs for each loss (docs/performance.md, "Across a
// lossy WAN"), and the default depth.
void codes(benchmark::internal::Benchmark* b) {
    b->Args({200, 4, 1, 1});
    b->Args({240, 10, 1, 10});
    b->Args({220, 28, 1, 50});
    b->Args({220, 28, 4, 50});
}

}  // namespace

BENCHMARK(BM_fec_receiver)->Apply(codes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_no_fec)->Apply(codes)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
