// What libslabcast costs its caller: one sender (as one MPI rank would open
// it, through the public C++ API only) sends a step file's values again and
// again to a receiver; prints one JSON line with the time each send_step call
// took in the caller's thread, and the rate at which the packets went out.
// Driven by testing/bench/sender_library.py, which runs `slabcast shuffle` on
// the same slab as the peer.
//
//   bench_sender_library --to HOST:PORT --dims NX,NY,NZ --step-file F --steps N
//                        [--rate R] [--queue Q] [--policy block|drop_oldest] [--wire W] [--codec C]
//                        [--compute-ms T]   (the simulation's time between steps: a sleep)
#include "slabcast/slabcast.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string option(int argc, char** argv, const std::string& name, const std::string& otherwise) {
    for (int i = 1; i + 1 < argc; ++i)
        if (argv[i] == name) return argv[i + 1];
    return otherwise;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
    const std::string to = option(argc, argv, "--to", ""), file = option(argc, argv, "--step-file", "");
    const std::string dims_text = option(argc, argv, "--dims", "256,256,256"), rate = option(argc, argv, "--rate", "0");
    const std::string wire = option(argc, argv, "--wire", "run"), codec = option(argc, argv, "--codec", "none");
    const std::string policy = option(argc, argv, "--policy", "block");
    const int steps = std::atoi(option(argc, argv, "--steps", "8").c_str());
    const double compute_ms = std::atof(option(argc, argv, "--compute-ms", "0").c_str());
    slabcast::Options o;
    if (std::sscanf(dims_text.c_str(), "%ld,%ld,%ld", &o.dims[0], &o.dims[1], &o.dims[2]) != 3 || to.empty() ||
        file.empty() || steps < 1) {
        std::fprintf(stderr, "usage: bench_sender_library --to HOST:PORT --dims NX,NY,NZ --step-file F --steps N\n");
        return 2;
    }
    // One sender owning the whole volume: one slab of depth nz (a rank's slab).
    o.z_begin = 0;
    o.z_end = o.dims[2];
    o.destination = to.c_str();
    o.rate = rate.c_str();
    o.wire = wire.c_str();
    o.codec = codec.c_str();
    o.queue_steps = std::atoi(option(argc, argv, "--queue", "0").c_str());
    o.queue_policy = policy == "drop_oldest" ? SLABCAST_QUEUE_DROP_OLDEST : SLABCAST_QUEUE_BLOCK;
    std::vector<float> values(static_cast<std::size_t>(o.dims[0] * o.dims[1] * o.dims[2]));
    std::ifstream in(file, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)))) {
        std::fprintf(stderr, "bench_sender_library: %s holds fewer than %zu values\n", file.c_str(), values.size());
        return 2;
    }
    try {
        slabcast::Sender sender(o);
        std::vector<double> calls;
        const auto started = std::chrono::steady_clock::now();
        for (int step = 0; step < steps; ++step) {
            const auto t = std::chrono::steady_clock::now();
            sender.send_step(step, values.data());
            calls.push_back(seconds_since(t));
            if (compute_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(compute_ms));
        }
        sender.flush();
        const double wall = seconds_since(started);
        const slabcast_stats s = sender.stats();
        std::vector<double> sorted = calls;
        std::sort(sorted.begin(), sorted.end());
        std::printf("{\"steps\": %d, \"call_median_s\": %.6f, \"call_max_s\": %.6f, \"call_min_s\": %.6f, "
                    "\"wall_s\": %.6f, \"send_s\": %.6f, \"bytes\": %lu, \"packets\": %lu, \"steps_sent\": %lu, "
                    "\"steps_dropped\": %lu}\n",
                    steps, sorted[sorted.size() / 2], sorted.back(), sorted.front(), wall, s.send_seconds,
                    static_cast<unsigned long>(s.bytes), static_cast<unsigned long>(s.packets),
                    static_cast<unsigned long>(s.steps_sent), static_cast<unsigned long>(s.steps_dropped));
        sender.close();
    } catch (const slabcast::Error& e) {
        std::fprintf(stderr, "bench_sender_library: %s (status %d)\n", e.what(), e.code());
        return 1;
    }
    return 0;
}
