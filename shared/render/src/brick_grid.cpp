#include "slabcast/render/brick_grid.h"

#include "slabcast/render/transfer_table.h"

#include <emmintrin.h>

#include <algorithm>
#include <limits>

namespace slabcast::render {

namespace {
// Bricks along an axis of n points: n - 1 cells.
std::int64_t bricks_for(std::int64_t n) { return std::max<std::int64_t>(1, (n - 2) / BrickGrid::kCells + 1); }
}  // namespace

void BrickGrid::resize(std::int64_t nx, std::int64_t ny, std::int64_t nz, int threads) {
    nx_ = nx;
    ny_ = ny;
    nz_ = nz;
    bx_ = bricks_for(nx);
    by_ = bricks_for(ny);
    bz_ = bricks_for(nz);
    threads_ = std::max(1, threads);
    least_.assign(static_cast<std::size_t>(bricks()), std::numeric_limits<float>::infinity());
    greatest_.assign(static_cast<std::size_t>(bricks()), -std::numeric_limits<float>::infinity());
    visible_.assign(static_cast<std::size_t>(bricks()) + 3, 1);
    scratch_.assign(static_cast<std::size_t>(threads_) * 2 * static_cast<std::size_t>(by_ * nx_), 0.0f);
}

namespace {

// lo[x] and hi[x] take line[x] in, for every x < n. MINPS and MAXPS return
// their second operand when either is NaN: with the running range second, a
// NaN leaves it as it was.
void fold_line(const float* line, float* lo, float* hi, std::int64_t n) {
    std::int64_t x = 0;
    for (; x + 4 <= n; x += 4) {
        const __m128 v = _mm_loadu_ps(line + x);
        _mm_storeu_ps(lo + x, _mm_min_ps(v, _mm_loadu_ps(lo + x)));
        _mm_storeu_ps(hi + x, _mm_max_ps(v, _mm_loadu_ps(hi + x)));
    }
    for (; x < n; ++x) {
        const float v = line[x];
        lo[x] = v < lo[x] ? v : lo[x];  // a NaN compares false: left out
        hi[x] = v > hi[x] ? v : hi[x];
    }
}

}  // namespace

void BrickGrid::measure(const float* values, std::int64_t z_begin, std::int64_t z_end, int thread) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    // Each line is folded whole into its row of bricks' running range, x by
    // x: the values are read once, front to back, four at a time (a brick's
    // 9 x 9 x 9 points one by one ran at a third of the memory's speed); a
    // brick's range is then the least and greatest of its 9 x's there.
    const auto row = static_cast<std::size_t>(nx_);
    float* lo_rows = scratch_.data() + static_cast<std::size_t>(thread) * 2 * static_cast<std::size_t>(by_) * row;
    float* hi_rows = lo_rows + static_cast<std::size_t>(by_) * row;
    for (std::int64_t bz = z_begin; bz < z_end; ++bz) {
        std::fill(lo_rows, lo_rows + static_cast<std::size_t>(by_) * row, kInf);
        std::fill(hi_rows, hi_rows + static_cast<std::size_t>(by_) * row, -kInf);
        const std::int64_t z0 = bz * kCells, z1 = std::min(nz_ - 1, z0 + kCells);
        for (std::int64_t z = z0; z <= z1; ++z) {
            for (std::int64_t y = 0; y < ny_; ++y) {
                const float* line = values + (z * ny_ + y) * nx_;
                // The bricks along y this line belongs to: y / kCells, and the
                // one below where it lies on their shared face.
                const std::int64_t by_hi = std::min(by_ - 1, y >> kShift);
                const std::int64_t by_lo = (y & (kCells - 1)) == 0 && y > 0 ? (y >> kShift) - 1 : by_hi;
                for (std::int64_t by = by_lo; by <= by_hi; ++by)
                    fold_line(line, lo_rows + static_cast<std::size_t>(by) * row, hi_rows + static_cast<std::size_t>(by) * row, nx_);
            }
        }
        for (std::int64_t by = 0; by < by_; ++by) {
            const float* lo = lo_rows + static_cast<std::size_t>(by) * row;
            const float* hi = hi_rows + static_cast<std::size_t>(by) * row;
            for (std::int64_t bx = 0; bx < bx_; ++bx) {
                const std::int64_t x0 = bx * kCells, x1 = std::min(nx_ - 1, x0 + kCells);
                float least = kInf, greatest = -kInf;
                for (std::int64_t x = x0; x <= x1; ++x) {
                    least = std::min(least, lo[x]);
                    greatest = std::max(greatest, hi[x]);
                }
                const std::int64_t b = (bz * by_ + by) * bx_ + bx;
                least_[b] = least;
                greatest_[b] = greatest;
            }
        }
    }
}

void BrickGrid::classify(const TransferTable& table) {
    for (std::int64_t b = 0; b < bricks(); ++b)
        visible_[b] = least_[b] <= greatest_[b] && table.any_opacity(least_[b], greatest_[b]) ? 1 : 0;
}

}  // namespace slabcast::render
