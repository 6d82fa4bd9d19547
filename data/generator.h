// What datagen's writer asks of a dataset kind: one step at a time, then that
// step's planes in z order. A kind may compute planes on the fly (blobs) or build
// the whole step in begin_step (cosmo); the writer streams either to disk.
#pragma once

#include "slabcast/volume.h"

#include <cstdint>
#include <memory>
#include <string>

namespace datagen {

class Progress;

class Generator {
public:
    virtual ~Generator() = default;
    virtual std::string units() const = 0;  // for dataset.json
    // Prepares step s (0-based), advancing `progress` by up to NZ; returns
    // what the step's summary line says about it.
    virtual std::string begin_step(int s, Progress& progress) = 0;
    virtual void plane(std::int64_t z, float* out) = 0;  // NX*NY values, x fastest
};

std::unique_ptr<Generator> make_blobs(const slabcast::Dims& dims, std::uint64_t seed);

// Knobs of the "cosmo" kind; the defaults are what the demo uses.
struct CosmoOptions {
    double cell = 1.0;       // cell size, Mpc/h
    double z_start = 30;     // redshift of the first step (nearly uniform)
    double z_end = 0;        // redshift of the last step (clustered)
    double smoothing = 1.5;  // Gaussian filter on the linear field, cells
    int particles = 8;       // particles a cell: 1 or 8
};

// Throws std::runtime_error (bad options, not enough memory) before any file is written.
std::unique_ptr<Generator> make_cosmo(const slabcast::Dims& dims, int steps, std::uint64_t seed,
                                      const CosmoOptions& options);

}  // namespace datagen
