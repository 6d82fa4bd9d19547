// "cosmo": dark-matter density (rho / mean) of a LambdaCDM-like universe in the
// Zel'dovich approximation, one step per scale factor evenly spaced from z_start
// to z_end, so structure grows step by step: a faint ripple first, then sheets,
// filaments and knots (halos) around emptying voids.
#include "cosmology.h"
#include "generator.h"
#include "hash_random.h"
#include "parallel.h"
#include "progress.h"
#include "zeldovich.h"

#include "slabcast/memory_info.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace datagen {
namespace {

// A floor keeps every value > 0 for log colour scales; it carries a per-voxel
// jitter so that even empty void cells hold distinct values (bit-exact transfer
// tests notice a misplaced voxel), and everything is divided by 1 + its mean
// (about 1.5 * kFloor, summed exactly once) so the mean density stays 1.
constexpr double kFloor = 1e-3;

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class Cosmo : public Generator {
public:
    Cosmo(const slabcast::Dims& dims, int steps, std::uint64_t seed, const CosmoOptions& o)
        : dims_(dims), steps_(steps), seed_(seed), o_(o) {
        if (!(o.cell > 0)) throw std::runtime_error("--cell must be > 0 Mpc/h");
        if (!(o.z_end >= 0 && o.z_start >= o.z_end))
            throw std::runtime_error("redshifts need --z-start >= --z-end >= 0");
        if (!(o.smoothing >= 0)) throw std::runtime_error("--smoothing must be >= 0");
        if (o.particles != 1 && o.particles != 8) throw std::runtime_error("--particles must be 1 or 8");
        const double gib = 1024.0 * 1024 * 1024;
        const std::uint64_t need = ZeldovichField::peak_bytes(dims), have = slabcast::mem_available_bytes();
        if (have && need > have) {
            char text[160];
            std::snprintf(text, sizeof text, "cosmo %s needs %.2f GiB of memory, only %.2f GiB available",
                          slabcast::to_string(dims).c_str(), need / gib, have / gib);
            throw std::runtime_error(text);
        }
        // Rough single-core rates (ns a voxel), shared by the threads: measured at
        // 1024^3 on a 2-core EPYC VM (setup 288 s, steps 127-145 s with other work
        // running); smaller volumes, whose grids fit the caches better, go ~2x faster.
        const double n = static_cast<double>(dims.count()) / worker_threads();
        const double step_ns = o.particles == 8 ? kStep8Ns : kStep1Ns;
        std::printf("cosmo %s, %d steps, box %.0fx%.0fx%.0f Mpc/h, particles/cell %d: needs %.2f GiB, "
                    "%d thread(s), estimated %.0f s (setup %.0f s + %.1f s a step)%s\n",
                    slabcast::to_string(dims).c_str(), steps, dims.nx * o.cell, dims.ny * o.cell, dims.nz * o.cell,
                    o.particles, need / gib, worker_threads(), n * (kSetupNs + steps * step_ns) * 1e-9,
                    n * kSetupNs * 1e-9, n * step_ns * 1e-9,
                    o.particles == 8 && dims.count() >= 1 << 27 ? "; --particles 1 is ~5x faster" : "");

        std::fflush(stdout);

        const auto t0 = std::chrono::steady_clock::now();
        const LinearPower power(cosmology_);
        field_ = std::make_unique<ZeldovichField>(
            dims, o.cell, seed, [&](double k) { return power(k); }, o.smoothing);
        rho_.resize(static_cast<std::size_t>(dims.count()));
        // Summed per plane, then in plane order: the same sum whatever the threads.
        std::vector<double> plane_sums(static_cast<std::size_t>(dims.nz));
        parallel_for(dims.nz, [&](std::int64_t z_begin, std::int64_t z_end) {
            for (std::int64_t z = z_begin; z < z_end; ++z) {
                double sum = 0;
                for (std::int64_t v = z * dims.plane(); v < (z + 1) * dims.plane(); ++v)
                    sum += floor_at(static_cast<std::uint64_t>(v));
                plane_sums[static_cast<std::size_t>(z)] = sum;
            }
        });
        double floor_sum = 0;
        for (const double s : plane_sums) floor_sum += s;
        norm_ = 1 / (1 + floor_sum / static_cast<double>(dims.count()));
        std::printf("setup: displacement field in %.1f s, rms %.2f cells, max %.1f cells at z=0\n",
                    seconds_since(t0), field_->rms_displacement(), field_->max_displacement());
        std::fflush(stdout);
    }

    std::string units() const override { return "rho/rho_mean"; }

    std::string begin_step(int s, Progress& progress) override {
        const double a0 = 1 / (1 + o_.z_start), a1 = 1 / (1 + o_.z_end);
        const double a = steps_ == 1 ? a1 : a0 + (a1 - a0) * s / (steps_ - 1);
        const double d = growth_factor(cosmology_, a);
        field_->deposit(d, o_.particles == 8 ? 2 : 1, rho_.data(), &progress);
        char text[64];
        std::snprintf(text, sizeof text, "z=%.2f D=%.3f", 1 / a - 1, d);
        return text;
    }

    void plane(std::int64_t z, float* out) override {
        const std::int64_t count = dims_.plane();
        const float* rho = rho_.data() + z * count;
        parallel_for(count, [&](std::int64_t begin, std::int64_t end) {
            for (std::int64_t i = begin; i < end; ++i)
                out[i] = static_cast<float>((rho[i] + floor_at(static_cast<std::uint64_t>(z * count + i))) * norm_);
        });
    }

private:
    double floor_at(std::uint64_t voxel) const { return kFloor * (1 + uniform_open(mix(seed_ ^ mix(~voxel)))); }

    static constexpr double kSetupNs = 450, kStep8Ns = 220, kStep1Ns = 45;
    slabcast::Dims dims_;
    int steps_;
    std::uint64_t seed_;
    CosmoOptions o_;
    Cosmology cosmology_;
    std::unique_ptr<ZeldovichField> field_;
    std::vector<float> rho_;
    double norm_ = 1;
};

}  // namespace

std::unique_ptr<Generator> make_cosmo(const slabcast::Dims& dims, int steps, std::uint64_t seed,
                                      const CosmoOptions& options) {
    return std::make_unique<Cosmo>(dims, steps, seed, options);
}

}  // namespace datagen
