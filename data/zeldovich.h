// Zel'dovich approximation on a periodic grid. One particle starts at each cell
// centre q and moves to x = q + D * psi(q), with psi = -grad(phi) and
// laplacian(phi) = delta_lin, the z = 0 linear density. psi is computed once
// (FFTs); every timestep is then only a scaled move plus a cloud-in-cell deposit.
#pragma once

#include "slabcast/volume.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace datagen {

class Progress;

class ZeldovichField {
public:
    // power(k): linear P(k) at z = 0, k in h/Mpc, (Mpc/h)^3. cell: cell size in Mpc/h.
    // smoothing: Gaussian filter radius (cells) applied to the linear field.
    ZeldovichField(const slabcast::Dims& dims, double cell, std::uint64_t seed,
                   const std::function<double(double)>& power, double smoothing);

    // Density / mean (CIC, periodic) of the particles moved by growth * psi, into
    // rho (dims.count() values, x fastest); per_axis 1 or 2 particles along each
    // axis of a cell. Over every core, bit-reproducible whatever their number;
    // advances `progress` (may be null) by one a lattice plane.
    void deposit(double growth, int per_axis, float* rho, Progress* progress) const;

    double max_displacement() const;  // cells, at growth 1
    double rms_displacement() const { return rms_; }
    // Most memory construction plus deposit() hold at once (the caller's rho included).
    static std::uint64_t peak_bytes(const slabcast::Dims& dims);

private:
    void deposit_planes(const float g[3], int per_axis, float* rho, std::int64_t z_begin, std::int64_t z_end,
                        Progress* progress) const;
    slabcast::Dims dims_;
    // psi in cells, stored as int16 times scale_: 6 bytes a particle instead of 12,
    // which keeps 1024^3 at about 12 GiB (peak_bytes); a step of 1/32767 of the
    // largest displacement is far below what CIC can resolve.
    std::vector<std::int16_t> psi_[3];
    double scale_[3] = {0, 0, 0};
    double rms_ = 0;
};

}  // namespace datagen
