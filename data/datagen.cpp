// slabcast-datagen: deterministic synthetic volumes in the dataset layout.
// "blobs": density-like Gaussian clumps that drift and grow from step to step,
// plus per-voxel noise so every value is distinct (bit-exact transfer tests).
#include "slabcast/dataset.h"
#include "slabcast/volume.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <filesystem>
#include <vector>

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

struct Blob {
    double x, y, z, vx, vy, vz, radius, mass;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"slabcast-datagen: write a synthetic float32 volume dataset"};
    std::string out, name = "blobs", dims_text = "64,64,64";
    int steps = 4;
    std::uint64_t seed = 1;
    app.add_option("--out", out, "dataset directory to create")->required();
    app.add_option("--dims", dims_text, "NX,NY,NZ")->capture_default_str();
    app.add_option("--steps", steps, "number of timesteps")->capture_default_str()->check(CLI::Range(1, 100000));
    app.add_option("--seed", seed, "random seed")->capture_default_str();
    app.add_option("--name", name, "dataset name")->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    try {
        const slabcast::Dims dims = slabcast::parse_dims(dims_text);
        std::filesystem::create_directories(out);
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> u(0, 1);
        std::vector<Blob> blobs(24);
        for (auto& b : blobs)
            b = Blob{u(rng) * dims.nx, u(rng) * dims.ny, u(rng) * dims.nz, (u(rng) - .5) * 2, (u(rng) - .5) * 2,
                     (u(rng) - .5) * 2, (0.03 + 0.07 * u(rng)) * dims.nx, 0.5 + 2 * u(rng)};

        slabcast::Dataset d;
        d.directory = out;
        d.name = name;
        d.field = "density";
        d.units = "arbitrary";
        d.dims = dims;
        std::vector<float> plane(static_cast<std::size_t>(dims.plane()));
        for (int s = 0; s < steps; ++s) {
            char file[64];
            std::snprintf(file, sizeof file, "step_%05d.raw", s);
            std::ofstream f(out + "/" + file, std::ios::binary | std::ios::trunc);
            if (!f) throw std::runtime_error(out + "/" + file + ": cannot write");
            for (std::int64_t z = 0; z < dims.nz; ++z) {
                for (std::int64_t y = 0; y < dims.ny; ++y)
                    for (std::int64_t x = 0; x < dims.nx; ++x) {
                        double v = 0.1;
                        for (const auto& b : blobs) {
                            const double r = b.radius * (1 + 0.05 * s);
                            const double dx = x - (b.x + b.vx * s), dy = y - (b.y + b.vy * s), dz = z - (b.z + b.vz * s);
                            const double q = (dx * dx + dy * dy + dz * dz) / (r * r);
                            if (q < 9) v += b.mass * std::exp(-q);
                        }
                        const std::uint64_t h = mix(seed ^ mix(static_cast<std::uint64_t>(
                                                                  slabcast::volume_offset(dims, x, y, z)) ^
                                                              (static_cast<std::uint64_t>(s) << 40)));
                        v *= 1 + 0.01 * (static_cast<double>(h >> 11) * 0x1.0p-53);
                        plane[static_cast<std::size_t>(y * dims.nx + x)] = static_cast<float>(v);
                    }
                f.write(reinterpret_cast<const char*>(plane.data()), static_cast<std::streamsize>(plane.size() * 4));
            }
            if (!f) throw std::runtime_error(out + "/" + file + ": write failed");
            d.steps.push_back(slabcast::DatasetStep{s, file});
        }
        slabcast::write_dataset_descriptor(d);
        std::printf("wrote %d steps of %s to %s\n", steps, slabcast::to_string(dims).c_str(), out.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "slabcast-datagen: %s\n", e.what());
        return 1;
    }
    return 0;
}
