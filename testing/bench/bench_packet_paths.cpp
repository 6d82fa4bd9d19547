// Benchmark: the per-packet work at both ends, without sockets, on one core:
// the shuffler packing packets from the staged volume, and the receiver's
// store path (validate, place every value in a real /dev/shm slab, duplicate
// bitmap, accounting), in quad packets (scan, Morton and progressive order)
// and raw run packets (scan and progressive order), each against the floor of
// its format: a plain memcpy, per packet, of the bytes the receiver stores
// from it (the values; for quad packets a quarter of the packet's bytes). This isolates them from the
// kernel's UDP path (and so from landing, which only scan order's run packets
// have: testing/bench/wire_formats.py measures that).
//
//   build/testing/bench_packet_paths [--benchmark_min_time=1]
//
// Prints Google Benchmark's table (bytes_per_second is packet bytes, as they
// arrive off the wire) and then the ratios.
#include "shuffle/slab_walker.h"
#include "receive/slab_receiver.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_packet.h"
#include "slabcast/slab_file.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace slabcast;

const Dims kDims{256, 256, 256};
constexpr int kDepth = 64;  // 4 slabs; the benchmark receives slab 1 (one ghost plane below)

struct Workload {
    std::string dir = "/dev/shm/slabcast-bench-packets-" + std::to_string(::getpid());
    SlabGeometry geometry = slab_geometry(kDims, kDepth, 1, 1);
    std::vector<float> volume;
    using Kind = std::pair<SendOrder, WireFormat>;
    std::map<Kind, std::vector<std::vector<std::uint8_t>>> packets;

    Workload() : volume(static_cast<std::size_t>(kDims.nx) * kDims.ny * kDims.nz) {
        std::filesystem::create_directories(dir);
        for (std::size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<float>(i % 977);
        for (const Kind kind : {Kind{SendOrder::Scan, WireFormat::Quad}, Kind{SendOrder::Morton, WireFormat::Quad},
                                Kind{SendOrder::Progressive, WireFormat::Quad}, Kind{SendOrder::Scan, WireFormat::Run},
                                Kind{SendOrder::Progressive, WireFormat::Run}}) {
            SlabWalker walker(kDims, geometry.stored_z_begin, geometry.z_end, kind.first, kind.second, {},
                              geometry.ghost_planes());
            std::vector<std::uint8_t> buffer(quad::kMaxPacketBytes);
            for (;;) {
                std::size_t bytes = 0;
                if (kind.second == WireFormat::Quad) {
                    const int n = walker.fill(buffer.data(), volume.data());
                    quad::write_header(buffer.data(), 0, n);
                    bytes = n ? quad::packet_bytes(n) : 0;
                } else {
                    bytes = walker.fill_run(buffer.data(), volume.data(), 0, geometry.index).bytes;
                }
                if (bytes == 0) break;
                packets[kind].emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(bytes));
            }
        }
    }
    ~Workload() { std::filesystem::remove_all(dir); }
    SlabMapping slab(const std::string& name) {
        return SlabMapping::create(dir + "/" + name, kDims, kDepth, geometry, "density");
    }
};

Workload& workload() {
    static Workload w;
    return w;
}

std::int64_t packet_bytes(const std::vector<std::vector<std::uint8_t>>& packets) {
    std::int64_t total = 0;
    for (const auto& p : packets) total += static_cast<std::int64_t>(p.size());
    return total;
}

// One whole step per iteration; the step number changes so each is a new step.
void receiver_handle(benchmark::State& state, SendOrder order, WireFormat wire) {
    Workload& w = workload();
    SlabMapping slab = w.slab("handle-" + std::to_string(static_cast<int>(order)) + "-" +
                              std::to_string(static_cast<int>(wire)) + ".slab1");
    std::uint64_t completed = 0;
    SlabReceiver receiver(1, slab, [&](const StepReport& r) { completed += r.complete; });
    auto& packets = w.packets[{order, wire}];
    // Where the step number is: a quad packet's batch, a run packet's step.
    const std::size_t step_at = wire == WireFormat::Quad ? 0 : 8;
    std::int32_t step = 0;
    for (auto _ : state) {
        ++step;
        for (auto& p : packets) {
            std::memcpy(p.data() + step_at, &step, 4);
            receiver.handle(p.data(), p.size(), 0);
        }
        receiver.post_counters();
    }
    if (completed != static_cast<std::uint64_t>(step)) state.SkipWithError("a step did not complete");
    state.SetBytesProcessed(state.iterations() * packet_bytes(packets));
}

// The receiver's floor: per packet, a memcpy of as many bytes as the receiver
// stores from it (its values, 4 bytes each: a quarter of a quad packet's
// records, a run packet's payload), from the packet into the next place of the
// same kind of slab, nothing decoded. Rates count packet bytes, as the
// receiver's do, so the ratio is the share of a bare copy's speed.
void memcpy_peer(benchmark::State& state, WireFormat wire) {
    Workload& w = workload();
    SlabMapping slab = w.slab("memcpy-" + std::to_string(static_cast<int>(wire)) + ".slab1");
    auto* dst = reinterpret_cast<std::uint8_t*>(slab.values_rw(0));
    const std::size_t capacity = slab.value_count() * sizeof(float);
    auto& packets = w.packets[{SendOrder::Scan, wire}];
    const auto stored = [wire](std::size_t size) {
        return wire == WireFormat::Quad ? (size - quad::kHeaderBytes) / quad::kRecordBytes * sizeof(float)
                                        : size - run::kHeaderBytes;
    };
    std::size_t stored_bytes = 0;
    for (const auto& p : packets) stored_bytes += stored(p.size());
    if (stored_bytes > capacity) state.SkipWithError("the packets hold more values than the slab");
    for (auto _ : state) {
        std::size_t at = 0;
        for (const auto& p : packets) {
            const std::size_t n = stored(p.size());
            std::memcpy(dst + at, p.data() + (wire == WireFormat::Quad ? quad::kHeaderBytes : run::kHeaderBytes), n);
            at += n;
        }
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * packet_bytes(packets));
    state.counters["stored_bytes_per_step"] = static_cast<double>(stored_bytes);
}

// The shuffler's side: packing one step's packets from the staged volume.
void shuffler_fill(benchmark::State& state, SendOrder order, WireFormat wire) {
    Workload& w = workload();
    SlabWalker walker(kDims, w.geometry.stored_z_begin, w.geometry.z_end, order, wire, {}, w.geometry.ghost_planes());
    std::vector<std::uint8_t> packets(quad::kMaxPacketBytes * 64);
    std::int64_t bytes = 0;
    for (auto _ : state) {
        walker.reset();
        for (int i = 0;; i = (i + 1) % 64) {
            std::uint8_t* packet = packets.data() + quad::kMaxPacketBytes * static_cast<std::size_t>(i);
            const std::size_t size =
                wire == WireFormat::Quad
                    ? quad::packet_bytes(walker.fill(packet, w.volume.data()))
                    : walker.fill_run(packet, w.volume.data(), 0, w.geometry.index).bytes;
            if (size <= quad::kHeaderBytes) break;  // nothing but a header: the step is done
            bytes += static_cast<std::int64_t>(size);
        }
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(bytes);
}

BENCHMARK_CAPTURE(shuffler_fill, scan_order, SendOrder::Scan, WireFormat::Quad)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(shuffler_fill, morton_order, SendOrder::Morton, WireFormat::Quad)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(shuffler_fill, progressive_order, SendOrder::Progressive, WireFormat::Quad)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(shuffler_fill, run_scan_order, SendOrder::Scan, WireFormat::Run)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(shuffler_fill, run_progressive_order, SendOrder::Progressive, WireFormat::Run)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(receiver_handle, scan_order, SendOrder::Scan, WireFormat::Quad)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(receiver_handle, morton_order, SendOrder::Morton, WireFormat::Quad)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(receiver_handle, progressive_order, SendOrder::Progressive, WireFormat::Quad)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(receiver_handle, run_scan_order, SendOrder::Scan, WireFormat::Run)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(receiver_handle, run_progressive_order, SendOrder::Progressive, WireFormat::Run)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memcpy_peer, quad, WireFormat::Quad)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(memcpy_peer, run, WireFormat::Run)->Unit(benchmark::kMillisecond);

// Collects the rates to print the ratios after the table.
class RatioReporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& r : runs)
            if (!r.error_occurred) rates_[r.benchmark_name()] = r.counters.at("bytes_per_second");
    }
    void Finalize() override {
        ConsoleReporter::Finalize();
        // Each path against the memcpy floor of its own packets' format.
        std::printf("\nGbit/s of packets built or handled on one core; peer: memcpy, per packet, of the values it\n"
                    "carries (what the receiver stores: quad, a quarter of its records' bytes; run, its payload)\n");
        for (const auto& [name, rate] : rates_) {
            const bool run = name.find("run") != std::string::npos;
            const auto peer = rates_.find(run ? "memcpy_peer/run" : "memcpy_peer/quad");
            std::printf("  %-40s %8.2f Gbit/s   %.2fx memcpy/%s\n", name.c_str(), rate * 8e-9,
                        peer == rates_.end() ? 0.0 : rate / peer->second, run ? "run" : "quad");
        }
        // The progressive order's store rate against scan order's, same packets' format, same slab.
        const auto ratio = [&](const char* a, const char* b) {
            const auto x = rates_.find(a), y = rates_.find(b);
            if (x != rates_.end() && y != rates_.end())
                std::printf("  %s / %s: %.2fx\n", a, b, x->second / y->second);
        };
        std::printf("\nprogressive order against scan order (receiver's store path, same packets' format):\n");
        ratio("receiver_handle/progressive_order", "receiver_handle/scan_order");
        ratio("receiver_handle/run_progressive_order", "receiver_handle/run_scan_order");
        std::printf("progressive order against scan order (shuffler's packing, same packets' format):\n");
        ratio("shuffler_fill/progressive_order", "shuffler_fill/scan_order");
        ratio("shuffler_fill/run_progressive_order", "shuffler_fill/run_scan_order");
    }

private:
    std::map<std::string, double> rates_;
};

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
