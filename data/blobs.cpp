// "blobs": density-like Gaussian clumps that drift and grow from step to step,
// plus per-voxel noise so every value is distinct (bit-exact transfer tests).
// The arithmetic is unchanged from the original generator, so its files are too.
#include "generator.h"
#include "hash_random.h"
#include "progress.h"

#include <cmath>
#include <random>
#include <vector>

namespace datagen {
namespace {

struct Blob {
    double x, y, z, vx, vy, vz, radius, mass;
};

class Blobs : public Generator {
public:
    Blobs(const slabcast::Dims& dims, std::uint64_t seed) : dims_(dims), seed_(seed), blobs_(24) {
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> u(0, 1);
        for (auto& b : blobs_)
            b = Blob{u(rng) * dims.nx, u(rng) * dims.ny, u(rng) * dims.nz, (u(rng) - .5) * 2, (u(rng) - .5) * 2,
                     (u(rng) - .5) * 2, (0.03 + 0.07 * u(rng)) * dims.nx, 0.5 + 2 * u(rng)};
    }
    std::string units() const override { return "arbitrary"; }
    std::string begin_step(int s, Progress& progress) override {
        progress.advance(dims_.nz);  // planes are computed as they are written
        step_ = s;
        return "blobs";
    }
    void plane(std::int64_t z, float* out) override {
        const int s = step_;
        for (std::int64_t y = 0; y < dims_.ny; ++y)
            for (std::int64_t x = 0; x < dims_.nx; ++x) {
                double v = 0.1;
                for (const auto& b : blobs_) {
                    const double r = b.radius * (1 + 0.05 * s);
                    const double dx = x - (b.x + b.vx * s), dy = y - (b.y + b.vy * s), dz = z - (b.z + b.vz * s);
                    const double q = (dx * dx + dy * dy + dz * dz) / (r * r);
                    if (q < 9) v += b.mass * std::exp(-q);
                }
                const std::uint64_t h =
                    mix(seed_ ^ mix(static_cast<std::uint64_t>(slabcast::volume_offset(dims_, x, y, z)) ^
                                    (static_cast<std::uint64_t>(s) << 40)));
                v *= 1 + 0.01 * (static_cast<double>(h >> 11) * 0x1.0p-53);
                out[y * dims_.nx + x] = static_cast<float>(v);
            }
    }

private:
    slabcast::Dims dims_;
    std::uint64_t seed_;
    std::vector<Blob> blobs_;
    int step_ = 0;
};

}  // namespace

std::unique_ptr<Generator> make_blobs(const slabcast::Dims& dims, std::uint64_t seed) {
    return std::make_unique<Blobs>(dims, seed);
}

}  // namespace datagen
