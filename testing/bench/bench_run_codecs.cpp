// Benchmark: run packets' codecs on one core, on a real cosmology step
// (slabcast-datagen's density field): the shuffler's encode (values into
// packets) and the receiver's decode, and the whole receive path (decode,
// store into a real /dev/shm slab, accounting), each against a memcpy of the
// same output bytes. Then, per codec, the wire ratio (values' bytes over
// packet bytes, headers included), values a packet, and the error against
// the step (max abs, PSNR over the step's range). No sockets: the kernel's
// UDP path is the loopback benchmarks' business.
//
// Then the same figures, but the receive path's, for peers: published lossy
// codecs cut into pieces that decode on their own (codec_peers.h: bit rounding
// + shuffle + LZ4 or zstd, zfp on 3-D bricks), measured on the same slab.
//
//   build/testing/bench_run_codecs --step data/cache/bench-256x256x256/step_00003.raw --dims 256,256,256
//       [--benchmark_min_time=1]
#include "codec_peers.h"
#include "receive/slab_receiver.h"
#include "shuffle/slab_walker.h"

#include "slabcast/run_codec.h"
#include "slabcast/slab_file.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace slabcast;

const char* const kCodecs[] = {"none", "lz4", "zfp:4", "zfp:8", "zfp:12", "zfp:16", "quant:8", "quant:10", "quant:12"};

struct Workload {
    Dims dims{256, 256, 256};
    int depth = 64;  // the benchmark sends and receives slab 1 (one ghost plane below)
    std::string dir = "/dev/shm/slabcast-bench-codecs-" + std::to_string(::getpid());
    std::vector<float> volume;
    SlabGeometry geometry;
    std::map<std::string, std::vector<std::vector<std::uint8_t>>> packets;  // by codec, and by peer: its pieces
    std::map<std::string, std::unique_ptr<bench::CodecPeer>> peers;

    void load(const std::string& path, const std::string& dims_text) {
        long long nx = 0, ny = 0, nz = 0;
        if (std::sscanf(dims_text.c_str(), "%lld,%lld,%lld", &nx, &ny, &nz) != 3 || nx < 1 || ny < 1 || nz < 4)
            throw std::invalid_argument("--dims NX,NY,NZ");
        dims = Dims{nx, ny, nz};
        depth = static_cast<int>(dims.nz / 4);
        volume.resize(static_cast<std::size_t>(dims.count()));
        std::ifstream in(path, std::ios::binary);
        if (!in.read(reinterpret_cast<char*>(volume.data()), static_cast<std::streamsize>(volume.size() * 4)))
            throw std::runtime_error(path + ": not " + std::to_string(volume.size()) + " float32 values");
        geometry = slab_geometry(dims, depth, 1, 1);
        std::filesystem::create_directories(dir);
        for (const char* codec : kCodecs) {
            SlabWalker walker(dims, geometry.stored_z_begin, geometry.z_end, SendOrder::Scan, WireFormat::Run,
                              run::parse_codec(codec));
            std::vector<std::uint8_t> buffer(run::kMaxPacketBytes);
            for (;;) {
                const run::RunEncoder::Packet p = walker.fill_run(buffer.data(), volume.data(), 0, 1);
                if (p.count == 0) break;
                packets[codec].emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(p.bytes));
            }
        }
        for (const std::string& name : bench::peer_names()) {
            auto peer = bench::make_peer(name, dims, geometry.stored_planes());
            std::vector<std::uint8_t> buffer(peer->max_piece_bytes());
            for (std::size_t i = 0; i < peer->pieces(); ++i) {
                const std::size_t bytes = peer->encode(i, slab_first(), buffer.data());
                packets[name].emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(bytes));
            }
            peers[name] = std::move(peer);
        }
    }
    ~Workload() { std::filesystem::remove_all(dir); }
    std::int64_t slab_values() const { return dims.plane() * (geometry.z_end - geometry.stored_z_begin); }
    const float* slab_first() const { return volume.data() + geometry.stored_z_begin * dims.plane(); }
};

Workload& workload() {
    static Workload w;
    return w;
}

std::int64_t bytes_of(const std::vector<std::vector<std::uint8_t>>& packets) {
    std::int64_t total = 0;
    for (const auto& p : packets) total += static_cast<std::int64_t>(p.size());
    return total;
}

// The shuffler: one slab of the step into packets, per iteration.
void encode(benchmark::State& state, const char* codec) {
    Workload& w = workload();
    SlabWalker walker(w.dims, w.geometry.stored_z_begin, w.geometry.z_end, SendOrder::Scan, WireFormat::Run,
                      run::parse_codec(codec));
    std::vector<std::uint8_t> out(run::kMaxPacketBytes * 64);
    for (auto _ : state) {
        walker.reset();
        for (int i = 0;; i = (i + 1) % 64)
            if (walker.fill_run(out.data() + run::kMaxPacketBytes * static_cast<std::size_t>(i), w.volume.data(), 0, 1)
                    .count == 0)
                break;
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * w.slab_values());
    state.SetBytesProcessed(state.iterations() * bytes_of(w.packets[codec]));
}

// The receiver's decode alone: every packet of the slab, per iteration.
void decode(benchmark::State& state, const char* codec) {
    Workload& w = workload();
    run::RunDecoder decoder;
    std::vector<float> out(static_cast<std::size_t>(w.slab_values()));
    for (auto _ : state) {
        std::size_t at = 0;
        for (const auto& p : w.packets[codec]) {
            run::Header h;
            run::parse_header(p.data(), p.size(), h);
            const float* v = decoder.decode(h, run::payload(p.data()));
            std::memcpy(out.data() + at, v, sizeof(float) * static_cast<std::size_t>(h.count));  // as the store does
            at += static_cast<std::size_t>(h.count);
        }
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * w.slab_values());
    state.SetBytesProcessed(state.iterations() * w.slab_values() * 4);
}

// The whole receive path: validate, decode, store into a real slab, account.
void receive(benchmark::State& state, const char* codec) {
    Workload& w = workload();
    std::string name = codec;
    std::replace(name.begin(), name.end(), ':', '_');
    SlabMapping slab = SlabMapping::create(w.dir + "/" + name + ".slab1", w.dims, w.depth, w.geometry, "density");
    std::uint64_t completed = 0;
    SlabReceiver receiver(1, slab, [&](const StepReport& r) { completed += r.complete; });
    auto& packets = w.packets[codec];
    std::int32_t step = 0;
    for (auto _ : state) {
        ++step;
        for (auto& p : packets) {
            std::memcpy(p.data() + 8, &step, 4);
            receiver.handle(p.data(), p.size(), 0);
        }
        receiver.post_counters();
    }
    if (completed != static_cast<std::uint64_t>(step)) state.SkipWithError("a step did not complete");
    state.SetItemsProcessed(state.iterations() * w.slab_values());
    state.SetBytesProcessed(state.iterations() * w.slab_values() * 4);
}

// The floor for both: a memcpy of the same output bytes from the step, into
// the same kind of destination: for encode, each packet's bytes into a ring of
// 64 packets (as the encoder writes); for decode, the values into a buffer of
// the slab's size.
void memcpy_peer(benchmark::State& state, const char* what) {
    Workload& w = workload();
    const bool values = std::string(what) == "values";
    const auto* from = reinterpret_cast<const std::uint8_t*>(w.slab_first());
    std::vector<std::uint8_t> out(values ? static_cast<std::size_t>(w.slab_values() * 4) : run::kMaxPacketBytes * 64);
    for (auto _ : state) {
        if (values) {
            std::memcpy(out.data(), from, out.size());
        } else {
            std::size_t at = 0, i = 0;
            for (const auto& p : w.packets[what]) {
                std::memcpy(out.data() + run::kMaxPacketBytes * (i++ % 64), from + at, p.size());
                at += p.size();
            }
        }
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * w.slab_values());
    state.SetBytesProcessed(state.iterations() * (values ? w.slab_values() * 4 : bytes_of(w.packets[what])));
}

// A peer's encode: the slab into its pieces, each into a ring of 64 as the
// encoder's packets go.
void encode_peer(benchmark::State& state, const std::string& name) {
    Workload& w = workload();
    bench::CodecPeer& peer = *w.peers.at(name);
    const std::size_t room = peer.max_piece_bytes();
    std::vector<std::uint8_t> out(room * 64);
    for (auto _ : state) {
        for (std::size_t i = 0; i < peer.pieces(); ++i) peer.encode(i, w.slab_first(), out.data() + room * (i % 64));
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * w.slab_values());
    state.SetBytesProcessed(state.iterations() * bytes_of(w.packets[name]));
}

// A peer's decode: every piece into its place in a buffer of the slab's size.
void decode_peer(benchmark::State& state, const std::string& name) {
    Workload& w = workload();
    bench::CodecPeer& peer = *w.peers.at(name);
    const auto& pieces = w.packets[name];
    std::vector<float> out(static_cast<std::size_t>(w.slab_values()));
    for (auto _ : state) {
        for (std::size_t i = 0; i < pieces.size(); ++i)
            if (!peer.decode(i, pieces[i].data(), pieces[i].size(), out.data())) {
                state.SkipWithError("a piece did not decode");
                break;
            }
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * w.slab_values());
    state.SetBytesProcessed(state.iterations() * w.slab_values() * 4);
}

void register_all() {
    for (const char* codec : kCodecs) {
        benchmark::RegisterBenchmark((std::string("encode/") + codec).c_str(), encode, codec)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((std::string("memcpy_packet_bytes/") + codec).c_str(), memcpy_peer, codec)
            ->Unit(benchmark::kMillisecond);
    }
    for (const char* codec : kCodecs) {
        benchmark::RegisterBenchmark((std::string("decode/") + codec).c_str(), decode, codec)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((std::string("receive/") + codec).c_str(), receive, codec)->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark("memcpy_values", memcpy_peer, "values")->Unit(benchmark::kMillisecond);
    for (const std::string& name : bench::peer_names()) {
        benchmark::RegisterBenchmark(("encode/" + name).c_str(), encode_peer, name)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("memcpy_packet_bytes/" + name).c_str(), memcpy_peer, name.c_str())
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("decode/" + name).c_str(), decode_peer, name)->Unit(benchmark::kMillisecond);
    }
}

// Ratio, values a packet and error per codec, from the packets built once.
void print_codec_table() {
    Workload& w = workload();
    const float* truth = w.slab_first();
    const std::int64_t n = w.slab_values();
    const auto [lo, hi] = std::minmax_element(truth, truth + n);
    std::printf("\nCodecs on slab 1 of the step (%lld values, range %.4g..%.4g)\n", static_cast<long long>(n), *lo, *hi);
    std::printf("  %-8s %9s %11s %10s %12s %10s %9s\n", "codec", "packets", "values/pkt", "wire ratio",
                "vs quad", "max abs", "PSNR dB");
    const double quad_bytes = static_cast<double>(n) * 16 + std::ceil(static_cast<double>(n) / 560) * 8;
    for (const char* codec : kCodecs) {
        run::RunDecoder decoder;
        double squares = 0, worst = 0;
        std::int64_t at = 0;
        for (const auto& p : w.packets[codec]) {
            run::Header h;
            run::parse_header(p.data(), p.size(), h);
            const float* v = decoder.decode(h, run::payload(p.data()));
            for (int i = 0; i < h.count; ++i) {
                const double e = std::fabs(static_cast<double>(v[i]) - truth[at + i]);
                squares += e * e;
                worst = std::max(worst, e);
            }
            at += h.count;
        }
        const double bytes = static_cast<double>(bytes_of(w.packets[codec]));
        const double mse = squares / static_cast<double>(n);
        const double range = static_cast<double>(*hi) - *lo;
        std::printf("  %-8s %9zu %11.0f %9.2fx %11.2fx %10.3g %9s\n", codec, w.packets[codec].size(),
                    static_cast<double>(n) / static_cast<double>(w.packets[codec].size()), 4.0 * n / bytes,
                    quad_bytes / bytes, worst, mse == 0 ? "exact" : std::to_string(10 * std::log10(range * range / mse)).substr(0, 6).c_str());
    }
}

// The same columns for the peers, each piece counted as a packet: its bytes
// plus a run packet's 36-byte header, so the ratios compare with the codecs'.
void print_peer_table() {
    Workload& w = workload();
    const float* truth = w.slab_first();
    const std::int64_t n = w.slab_values();
    const auto [lo, hi] = std::minmax_element(truth, truth + n);
    const double range = static_cast<double>(*hi) - *lo;
    std::printf("\nPeers on the same slab (benchmark only; each piece decodes on its own, counted as a packet)\n");
    std::printf("  %-24s %9s %11s %10s %12s %10s %9s\n", "peer", "packets", "values/pkt", "wire ratio", "vs quad",
                "max abs", "PSNR dB");
    const double quad_bytes = static_cast<double>(n) * 16 + std::ceil(static_cast<double>(n) / 560) * 8;
    std::vector<float> out(static_cast<std::size_t>(n));
    for (const std::string& name : bench::peer_names()) {
        const auto& pieces = w.packets[name];
        bool decoded = true;
        for (std::size_t i = 0; i < pieces.size(); ++i)
            decoded = w.peers.at(name)->decode(i, pieces[i].data(), pieces[i].size(), out.data()) && decoded;
        double squares = 0, worst = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double e = std::fabs(static_cast<double>(out[static_cast<std::size_t>(i)]) - truth[i]);
            squares += e * e;
            worst = std::max(worst, e);
        }
        const double bytes = static_cast<double>(bytes_of(pieces) + static_cast<std::int64_t>(pieces.size()) *
                                                                        static_cast<std::int64_t>(run::kHeaderBytes));
        const double mse = squares / static_cast<double>(n);
        const std::string psnr = !decoded  ? "failed"
                                 : mse == 0 ? "exact"
                                            : std::to_string(10 * std::log10(range * range / mse)).substr(0, 6);
        std::printf("  %-24s %9zu %11.0f %9.2fx %11.2fx %10.3g %9s\n", name.c_str(), pieces.size(),
                    static_cast<double>(n) / static_cast<double>(pieces.size()), 4.0 * n / bytes, quad_bytes / bytes,
                    worst, psnr.c_str());
    }
}

class RatioReporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& r : runs)
            if (!r.error_occurred) {
                items_[r.benchmark_name()] = r.counters.at("items_per_second");
                bytes_[r.benchmark_name()] = r.counters.at("bytes_per_second");
            }
    }
    void Finalize() override {
        ConsoleReporter::Finalize();
        std::printf("\nOne core: Mvoxel/s, output Gbit/s, and against a memcpy of the same output bytes\n");
        std::printf("  %-8s | %-34s | %-34s | %s\n", "codec", "encode (output: packet bytes)", "decode (output: values)",
                    "receive path (decode+store)");
        const double values_floor = bytes_["memcpy_values"];
        for (const char* codec : kCodecs) {
            const std::string c = codec;
            const double enc_floor = bytes_["memcpy_packet_bytes/" + c];
            std::printf("  %-8s | %8.0f Mvox/s %6.2f Gbit/s %5.3fx | %8.0f Mvox/s %6.2f Gbit/s %5.3fx | %8.0f Mvox/s %5.3fx\n",
                        codec, items_["encode/" + c] * 1e-6, bytes_["encode/" + c] * 8e-9,
                        enc_floor > 0 ? bytes_["encode/" + c] / enc_floor : 0.0, items_["decode/" + c] * 1e-6,
                        bytes_["decode/" + c] * 8e-9, values_floor > 0 ? bytes_["decode/" + c] / values_floor : 0.0,
                        items_["receive/" + c] * 1e-6,
                        values_floor > 0 ? bytes_["receive/" + c] / values_floor : 0.0);
        }
        print_codec_table();
        std::printf("\nPeers, one core (no receive path: no receiver takes them)\n");
        std::printf("  %-24s | %-34s | %s\n", "peer", "encode (output: piece bytes)", "decode (output: values)");
        for (const std::string& p : bench::peer_names()) {
            const double enc_floor = bytes_["memcpy_packet_bytes/" + p];
            std::printf("  %-24s | %8.0f Mvox/s %6.2f Gbit/s %5.3fx | %8.0f Mvox/s %6.2f Gbit/s %5.3fx\n", p.c_str(),
                        items_["encode/" + p] * 1e-6, bytes_["encode/" + p] * 8e-9,
                        enc_floor > 0 ? bytes_["encode/" + p] / enc_floor : 0.0, items_["decode/" + p] * 1e-6,
                        bytes_["decode/" + p] * 8e-9, values_floor > 0 ? bytes_["decode/" + p] / values_floor : 0.0);
        }
        print_peer_table();
    }

private:
    std::map<std::string, double> items_, bytes_;
};

}  // namespace

int main(int argc, char** argv) {
    std::string step, dims = "256,256,256";
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--step" && i + 1 < argc) step = argv[++i];
        else if (a == "--dims" && i + 1 < argc) dims = argv[++i];
        else rest.push_back(argv[i]);
    }
    if (step.empty()) {
        std::fprintf(stderr, "usage: %s --step STEP.raw [--dims NX,NY,NZ] [benchmark options]\n", argv[0]);
        return 2;
    }
    try {
        workload().load(step, dims);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_run_codecs: %s\n", e.what());
        return 2;
    }
    int count = static_cast<int>(rest.size());
    benchmark::Initialize(&count, rest.data());
    register_all();
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
