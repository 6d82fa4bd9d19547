// Cloud-in-cell deposit of the Zel'dovich particles for one step, over every
// core (zeldovich.h).
#include "zeldovich.h"

#include "parallel.h"
#include "progress.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace datagen {
namespace {

// Cloud-in-cell onto a periodic grid: a particle at p (cells, cell centres at
// integers) spreads its mass over the 8 cells around it. Inlined into both
// deposit loops; floor is an offset truncation, as baseline x86-64 has no cheap floor.
class Cic {
public:
    Cic(const slabcast::Dims& d, float* rho) : nx_(d.nx), ny_(d.ny), nz_(d.nz), rho_(rho) {}

    __attribute__((always_inline)) inline void add(double px, double py, double pz, float mass) const {
        std::int64_t x0, x1, y0, y1, z0, z1;
        const float fx = split(px, nx_, x0, x1), fy = split(py, ny_, y0, y1), fz = split(pz, nz_, z0, z1);
        float* r00 = rho_ + (z0 * ny_ + y0) * nx_;
        float* r01 = rho_ + (z0 * ny_ + y1) * nx_;
        float* r10 = rho_ + (z1 * ny_ + y0) * nx_;
        float* r11 = rho_ + (z1 * ny_ + y1) * nx_;
        const float a00 = (1 - fz) * (1 - fy) * mass, a01 = (1 - fz) * fy * mass, a10 = fz * (1 - fy) * mass,
                    a11 = fz * fy * mass;
        r00[x0] += a00 * (1 - fx);
        r00[x1] += a00 * fx;
        r01[x0] += a01 * (1 - fx);
        r01[x1] += a01 * fx;
        r10[x0] += a10 * (1 - fx);
        r10[x1] += a10 * fx;
        r11[x0] += a11 * (1 - fx);
        r11[x1] += a11 * fx;
    }

private:
    // Cell index i0 (and i1 = the next one, periodic) and the fraction that spills into i1.
    // Valid for |p| < 2^22; positions stay within a few hundred cells of the box.
    static float split(double p, std::int64_t n, std::int64_t& i0, std::int64_t& i1) {
        constexpr std::int64_t kBig = std::int64_t{1} << 22;
        const std::int64_t f = static_cast<std::int64_t>(p + static_cast<double>(kBig)) - kBig;
        i0 = f;
        if (i0 < 0 || i0 >= n) i0 = ((i0 % n) + n) % n;
        i1 = i0 + 1 == n ? 0 : i0 + 1;
        return static_cast<float>(p - static_cast<double>(f));
    }
    std::int64_t nx_, ny_, nz_;
    float* rho_;
};

}  // namespace

// Particles of lattice planes [z_begin, z_end), in lattice order.
void ZeldovichField::deposit_planes(const float g[3], int per_axis, float* rho, std::int64_t z_begin,
                                    std::int64_t z_end, Progress* progress) const {
    const std::int64_t nx = dims_.nx, ny = dims_.ny, nz = dims_.nz;
    const Cic cic(dims_, rho);
    if (per_axis == 1) {
        for (std::int64_t z = z_begin; z < z_end; ++z) {
            std::size_t i = static_cast<std::size_t>(z * ny * nx);
            for (std::int64_t y = 0; y < ny; ++y)
                for (std::int64_t x = 0; x < nx; ++x, ++i)
                    cic.add(x + g[0] * psi_[0][i], y + g[1] * psi_[1][i], z + g[2] * psi_[2][i], 1.0f);
            if (progress) progress->advance();
        }
        return;
    }
    // 8 particles a cell, at q + 1/4 and q + 3/4 along each axis of the cube between
    // neighbouring lattice points, psi linear in between: in voids, where particles
    // spread apart, this keeps CIC from leaving a lattice of empty cells. psi is
    // interpolated separably: z into a plane, y into a line, then x per particle.
    static constexpr float kOffset[2] = {0.25f, 0.75f};
    const std::size_t plane = static_cast<std::size_t>(nx * ny);
    std::vector<float> pz(3 * plane), line(3 * static_cast<std::size_t>(nx));
    for (std::int64_t z = z_begin; z < z_end; ++z) {
        for (const float tz : kOffset) {
            const std::size_t p0 = static_cast<std::size_t>(z) * plane, p1 = (z + 1 == nz ? 0 : z + 1) * plane;
            for (int c = 0; c < 3; ++c)
                for (std::size_t i = 0; i < plane; ++i)
                    pz[c * plane + i] = g[c] * ((1 - tz) * psi_[c][p0 + i] + tz * psi_[c][p1 + i]);
            for (std::int64_t y = 0; y < ny; ++y)
                for (const float ty : kOffset) {
                    const std::size_t r0 = y * nx, r1 = (y + 1 == ny ? 0 : y + 1) * nx;
                    for (int c = 0; c < 3; ++c)
                        for (std::int64_t x = 0; x < nx; ++x)
                            line[c * nx + x] = (1 - ty) * pz[c * plane + r0 + x] + ty * pz[c * plane + r1 + x];
                    const float *lx = line.data(), *ly = lx + nx, *lz = ly + nx;
                    for (std::int64_t x = 0; x < nx; ++x) {
                        const std::int64_t x1 = x + 1 == nx ? 0 : x + 1;
                        for (const float tx : kOffset)
                            cic.add(x + tx + ((1 - tx) * lx[x] + tx * lx[x1]), y + ty + ((1 - tx) * ly[x] + tx * ly[x1]),
                                    z + tz + ((1 - tx) * lz[x] + tx * lz[x1]), 0.125f);
                    }
                }
        }
        if (progress) progress->advance();
    }
}

// Particles move at most `reach` planes along z from their lattice plane.
// Lattice planes are cut into an even number of chunks, each at least
// 2 * reach planes thick, so that two chunks of the same parity (periodic
// wrap included) never touch the same density plane: the even chunks deposit
// in parallel, then the odd ones. Each cell then sums its particles in an
// order fixed by the chunks, which depend on the volume, not on the threads.
void ZeldovichField::deposit(double growth, int per_axis, float* rho, Progress* progress) const {
    if (growth * max_displacement() > 1 << 20) throw std::runtime_error("displacements beyond 2^20 cells");
    const std::int64_t plane = dims_.plane(), nz = dims_.nz;
    parallel_for(nz, [&](std::int64_t z_begin, std::int64_t z_end) {
        std::fill(rho + z_begin * plane, rho + z_end * plane, 0.0f);
    });
    const float g[3] = {static_cast<float>(growth * scale_[0]), static_cast<float>(growth * scale_[1]),
                        static_cast<float>(growth * scale_[2])};
    // 32767 * g: the largest |psi_z| * growth, in cells; + 1 for the particles' offsets within
    // a cell, + 1 for the CIC neighbour.
    const std::int64_t reach = static_cast<std::int64_t>(std::ceil(32767.0 * g[2])) + 2;
    std::int64_t chunks = nz / (2 * reach);
    chunks -= chunks % 2;
    if (chunks < 2) {
        deposit_planes(g, per_axis, rho, 0, nz, progress);
        return;
    }
    for (int parity = 0; parity < 2; ++parity)
        parallel_for(chunks / 2, [&](std::int64_t first, std::int64_t last) {
            for (std::int64_t k = 2 * first + parity; k < 2 * last; k += 2)
                deposit_planes(g, per_axis, rho, nz * k / chunks, nz * (k + 1) / chunks, progress);
        });
}

}  // namespace datagen
