// What a full-resolution frame of the CPU ray marcher costs (issue 57), on a
// real cosmology step, against the same march without asking for each
// lane's values ahead of its samples (March::prefetch off): the same rays,
// samples, table and picture, so the ratio is what the prefetch is worth. A
// 1024^3 step (the SC11 size: Balman et al., 2012, section 4) is many times
// the L3, and a ray crosses a z plane almost every sample. slabcast_render.py's
// look: colour and opacity spread evenly in log(value), the opacity rising as
// the cube of the log position, per 1/32 of the box; a perspective camera
// turned 30 degrees in azimuth and 20 in elevation, 1280x720, on every
// thread of the host. Counter: frames_per_s.
//
//   build/testing/bench_ray_march --step data/cache/cosmo-1024x1024x1024-4/step_00003.raw --edge 1024
#include "slabcast/render/ray_march.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace slabcast::render;

namespace {

constexpr int kWidth = 1280, kHeight = 720;
constexpr double kPi = 3.14159265358979323846;

struct Scene {
    std::vector<float> values;
    Piece piece;
    TransferTable table;
    Rays rays;
};

// ParaView's camera after ResetCamera, Azimuth(30), Elevation(20): the box's
// bounding sphere fills a 30-degree view angle.
Rays camera(double edge) {
    const double centre = edge / 2, radius = std::sqrt(3.0) * centre, distance = radius / std::sin(15 * kPi / 180);
    const double azimuth = 30 * kPi / 180, elevation = 20 * kPi / 180;
    const double back[3] = {std::sin(azimuth) * std::cos(elevation), std::sin(elevation),
                            std::cos(azimuth) * std::cos(elevation)};
    const double eye[3] = {centre + distance * back[0], centre + distance * back[1], centre + distance * back[2]};
    double right[3] = {back[2], 0, -back[0]};  // up (0, 1, 0) x back
    const double length = std::hypot(right[0], right[2]);
    for (double& v : right) v /= length;
    const double up[3] = {back[1] * right[2] - back[2] * right[1], back[2] * right[0] - back[0] * right[2],
                          back[0] * right[1] - back[1] * right[0]};
    // Normalized device coordinates to world: the view's inverse (its
    // rotation's transpose, then the eye) after the perspective's inverse.
    const double near = distance - radius, far = distance + radius, f = 1 / std::tan(15 * kPi / 180);
    const double aspect = static_cast<double>(kWidth) / kHeight;
    const double a = (far + near) / (near - far), b = 2 * far * near / (near - far);
    const double from_clip[16] = {aspect / f, 0, 0, 0, 0, 1 / f, 0, 0, 0, 0, 0, -1, 0, 0, 1 / b, a / b};
    const double from_view[16] = {right[0], up[0], back[0], eye[0], right[1], up[1], back[1], eye[1],
                                  right[2], up[2], back[2], eye[2], 0,        0,     0,       1};
    Rays rays;
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
            rays.to_world[4 * r + c] = 0;
            for (int k = 0; k < 4; ++k) rays.to_world[4 * r + c] += from_view[4 * r + k] * from_clip[4 * k + c];
        }
    return rays;
}

Scene& scene() {
    static Scene s;
    return s;
}

bool load(const std::string& path, std::int64_t edge) {
    Scene& s = scene();
    s.values.resize(static_cast<std::size_t>(edge * edge * edge));
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(s.values.data()), static_cast<std::streamsize>(s.values.size() * sizeof(float))))
        return false;
    const auto [least, most] = std::minmax_element(s.values.begin(), s.values.end());
    const float hi = *most, lo = *least > 0 ? *least : hi * 1e-4f;  // slabcast_render.py's --min-fraction
    std::vector<float> rgb(3 * TransferTable::kEntries), opacity(TransferTable::kEntries);
    for (int i = 0; i < TransferTable::kEntries; ++i) {
        const double v = lo + (hi - lo) * i / (TransferTable::kEntries - 1);
        const double t = std::clamp((std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)), 0.0, 1.0);
        rgb[3 * i] = static_cast<float>(t);
        rgb[3 * i + 1] = static_cast<float>(t * t);
        rgb[3 * i + 2] = static_cast<float>(0.5 * t);
        opacity[i] = static_cast<float>(0.6 * t * t * t);
    }
    s.table.set(lo, hi, rgb.data(), opacity.data(), 1.0, static_cast<double>(edge - 1) / 32);
    s.piece.values = s.values.data();
    s.piece.nx = s.piece.ny = s.piece.nz = edge;
    s.piece.whole_is_piece();
    s.rays = camera(static_cast<double>(edge - 1));
    return true;
}

void frame(benchmark::State& state, bool prefetch) {
    Scene& s = scene();
    WorkerPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    RayMarcher marcher;
    marcher.measure(s.piece, pool);
    March march;
    march.prefetch = prefetch;
    Image image;
    image.resize(kWidth, kHeight);
    for (auto _ : state) {
        marcher.render(s.piece, s.table, s.rays, march, image, pool);
        benchmark::DoNotOptimize(image.rgba.data());
    }
    state.counters["frames_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
    std::string step;
    std::int64_t edge = 0;
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--step" && i + 1 < argc) step = argv[++i];
        else if (a == "--edge" && i + 1 < argc) edge = std::stoll(argv[++i]);
        else rest.push_back(argv[i]);
    }
    if (step.empty() || edge < 2 || edge > 2048) {
        std::fprintf(stderr, "usage: %s --step STEP.raw --edge N (an N^3 float32 step, 2 <= N <= 2048) [benchmark options]\n",
                     argv[0]);
        return 2;
    }
    if (!load(step, edge)) {
        std::fprintf(stderr, "bench_ray_march: %s does not hold %lld^3 float32 values\n", step.c_str(),
                     static_cast<long long>(edge));
        return 1;
    }
    // Each way in turn, three times, so that neither gets the quieter minutes.
    for (int round = 0; round < 3; ++round)
        for (const bool prefetch : {true, false})
            benchmark::RegisterBenchmark(prefetch ? "frame/prefetch" : "frame/no_prefetch", frame, prefetch)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime()
                ->Iterations(3);
    int count = static_cast<int>(rest.size());
    benchmark::Initialize(&count, rest.data());
    benchmark::RunSpecifiedBenchmarks();
    return 0;
}
