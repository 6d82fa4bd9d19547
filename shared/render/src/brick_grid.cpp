#include "slabcast/render/brick_grid.h"

#include "slabcast/render/transfer_table.h"

#include <algorithm>
#include <limits>

namespace slabcast::render {

namespace {
// Bricks along an axis of n points: n - 1 cells.
std::int64_t bricks_for(std::int64_t n) { return std::max<std::int64_t>(1, (n - 2) / BrickGrid::kCells + 1); }
}  // namespace

void BrickGrid::resize(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
    nx_ = nx;
    ny_ = ny;
    nz_ = nz;
    bx_ = bricks_for(nx);
    by_ = bricks_for(ny);
    bz_ = bricks_for(nz);
    least_.assign(static_cast<std::size_t>(bricks()), std::numeric_limits<float>::infinity());
    greatest_.assign(static_cast<std::size_t>(bricks()), -std::numeric_limits<float>::infinity());
    visible_.assign(static_cast<std::size_t>(bricks()) + 3, 1);
}

void BrickGrid::measure(const float* values, std::int64_t z_begin, std::int64_t z_end) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (std::int64_t bz = z_begin; bz < z_end; ++bz) {
        for (std::int64_t b = bz * by_ * bx_; b < (bz + 1) * by_ * bx_; ++b) {
            least_[b] = kInf;
            greatest_[b] = -kInf;
        }
        const std::int64_t z0 = bz * kCells, z1 = std::min(nz_ - 1, z0 + kCells);
        for (std::int64_t z = z0; z <= z1; ++z) {
            for (std::int64_t y = 0; y < ny_; ++y) {
                const float* line = values + (z * ny_ + y) * nx_;
                // The bricks along y this line belongs to: y / kCells, and the
                // one below where it lies on their shared face.
                const std::int64_t by_hi = std::min(by_ - 1, y >> kShift);
                const std::int64_t by_lo = (y & (kCells - 1)) == 0 && y > 0 ? (y >> kShift) - 1 : by_hi;
                for (std::int64_t bx = 0; bx < bx_; ++bx) {
                    const std::int64_t x0 = bx * kCells, x1 = std::min(nx_ - 1, x0 + kCells);
                    float lo = kInf, hi = -kInf;
                    for (std::int64_t x = x0; x <= x1; ++x) {
                        const float v = line[x];
                        lo = v < lo ? v : lo;  // a NaN compares false: left out
                        hi = v > hi ? v : hi;
                    }
                    for (std::int64_t by = by_lo; by <= by_hi; ++by) {
                        const std::int64_t b = (bz * by_ + by) * bx_ + bx;
                        least_[b] = std::min(least_[b], lo);
                        greatest_[b] = std::max(greatest_[b], hi);
                    }
                }
            }
        }
    }
}

void BrickGrid::classify(const TransferTable& table) {
    for (std::int64_t b = 0; b < bricks(); ++b)
        visible_[b] = least_[b] <= greatest_[b] && table.any_opacity(least_[b], greatest_[b]) ? 1 : 0;
}

}  // namespace slabcast::render
