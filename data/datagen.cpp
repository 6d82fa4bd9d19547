// slabcast-datagen: deterministic synthetic volumes in the dataset layout
// (dataset.json + one raw little-endian float32 file per step, x fastest).
// Kinds: "cosmo" (default), a Zel'dovich dark-matter density field whose
// structure grows step by step; "blobs", drifting Gaussian clumps. The writer
// streams one step at a time, one plane at a time, and prints a line per step.
#include "generator.h"
#include "parallel.h"
#include "progress.h"
#include "slabcast/dataset.h"
#include "slabcast/volume.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct StepStats {
    std::string what;  // the generator's words for the step
    double lo = INFINITY, hi = -INFINITY, sum = 0, sum_sq = 0;
};

// Step s into `path`, plane by plane, with a progress bar (the generator's
// preparation is its first half, the planes written its second).
StepStats write_step(datagen::Generator& generator, int s, int steps, const slabcast::Dims& dims,
                     const std::string& path) {
    StepStats st;
    datagen::Progress progress("step " + std::to_string(s + 1) + "/" + std::to_string(steps), 2 * dims.nz);
    st.what = generator.begin_step(s, progress);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error(path + ": cannot write");
    std::vector<float> plane(static_cast<std::size_t>(dims.plane()));
    for (std::int64_t z = 0; z < dims.nz; ++z) {
        generator.plane(z, plane.data());
        for (const float v : plane) {
            st.lo = std::min<double>(st.lo, v);
            st.hi = std::max<double>(st.hi, v);
            st.sum += v;
            st.sum_sq += static_cast<double>(v) * v;
        }
        f.write(reinterpret_cast<const char*>(plane.data()), static_cast<std::streamsize>(plane.size() * 4));
        progress.advance();
    }
    f.close();
    if (!f) throw std::runtime_error(path + ": write failed");
    return st;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"slabcast-datagen: write a synthetic float32 volume dataset"};
    std::string out, name, kind = "cosmo", dims_text = "64,64,64";
    int steps = 4;
    std::uint64_t seed = 1;
    datagen::CosmoOptions cosmo;
    app.add_option("--out", out, "dataset directory to create")->required();
    app.add_option("--dims", dims_text, "NX,NY,NZ")->capture_default_str();
    app.add_option("--steps", steps, "number of timesteps")->capture_default_str()->check(CLI::Range(1, 100000));
    app.add_option("--seed", seed, "random seed")->capture_default_str();
    int threads = 0;
    app.add_option("--threads", threads, "threads (default: every core); the output does not depend on it")
        ->check(CLI::Range(0, 1024));
    app.add_option("--name", name, "dataset name (default: the kind)");
    app.add_option("--kind", kind, "cosmo: Zel'dovich dark-matter density; blobs: drifting Gaussian clumps")
        ->capture_default_str()
        ->check(CLI::IsMember({"cosmo", "blobs"}));
    app.add_option("--cell", cosmo.cell, "cosmo: cell size in Mpc/h")->capture_default_str();
    app.add_option("--z-start", cosmo.z_start, "cosmo: redshift of the first step")->capture_default_str();
    app.add_option("--z-end", cosmo.z_end, "cosmo: redshift of the last step")->capture_default_str();
    app.add_option("--smoothing", cosmo.smoothing, "cosmo: Gaussian smoothing of the linear field, cells")
        ->capture_default_str();
    app.add_option("--particles", cosmo.particles, "cosmo: particles a cell, 1 or 8 (smoother voids, slower)")
        ->capture_default_str()
        ->check(CLI::IsMember({1, 8}));
    CLI11_PARSE(app, argc, argv);
    if (name.empty()) name = kind;

    try {
        const slabcast::Dims dims = slabcast::parse_dims(dims_text);
        // Fail on an unusable --out now, not after a long setup.
        std::error_code ec;
        std::filesystem::create_directories(out, ec);
        if (ec) throw std::runtime_error("--out " + out + ": cannot create the directory: " + ec.message());
        const std::string probe = out + "/.datagen-probe";
        if (!std::ofstream(probe)) throw std::runtime_error("--out " + out + ": directory is not writable");
        std::filesystem::remove(probe);
        // Refused before the setup (minutes at 1024^3), not at the last step.
        const std::uintmax_t need = static_cast<std::uintmax_t>(steps) * static_cast<std::uintmax_t>(dims.count()) * 4,
                             free = std::filesystem::space(out).available;
        if (need > free)
            throw std::runtime_error("--out " + out + ": " + std::to_string(steps) + " steps of " +
                                     slabcast::to_string(dims) + " need " + std::to_string(need >> 20) + " MiB, only " +
                                     std::to_string(free >> 20) + " MiB free there");
        datagen::set_worker_threads(threads);
        const auto generator = kind == "blobs" ? datagen::make_blobs(dims, seed)
                                               : datagen::make_cosmo(dims, steps, seed, cosmo);
        slabcast::Dataset d;
        d.directory = out;
        d.name = name;
        d.field = "density";
        d.units = generator->units();
        d.dims = dims;
        const auto start = std::chrono::steady_clock::now();
        for (int s = 0; s < steps; ++s) {
            const auto t0 = std::chrono::steady_clock::now();
            char file[64];
            std::snprintf(file, sizeof file, "step_%05d.raw", s);
            const StepStats st = write_step(*generator, s, steps, dims, out + "/" + file);
            slabcast::DatasetStep entry;
            entry.number = s;
            entry.file = file;
            d.steps.push_back(entry);
            const double n = static_cast<double>(dims.count()), mean = st.sum / n;
            const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::printf("step %d/%d %s: min %.4g max %.4g mean %.6g sd %.4g, %.2f s (about %.0f s left)\n", s + 1,
                        steps, st.what.c_str(), st.lo, st.hi, mean, std::sqrt(std::max(0.0, st.sum_sq / n - mean * mean)),
                        step_s, elapsed / (s + 1) * (steps - s - 1));
            std::fflush(stdout);
        }
        slabcast::write_dataset_descriptor(d);
        std::printf("wrote %d steps of %s to %s\n", steps, slabcast::to_string(dims).c_str(), out.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "slabcast-datagen: %s\n", e.what());
        return 1;
    }
    return 0;
}
