// The least and greatest value in each brick of kCells^3 cells of a volume
// piece: where the transfer function gives every value in a brick's range no
// opacity, the ray marcher steps over the whole brick (empty-space skipping;
// in a cosmology step most of the box is void). A brick spans kCells + 1
// points along each axis, the points a sample in any of its cells
// interpolates between.
#pragma once

#include <cstdint>
#include <vector>

namespace slabcast::render {

class TransferTable;

class BrickGrid {
public:
    static constexpr int kShift = 3;
    static constexpr int kCells = 1 << kShift;

    // Sizes the grid for a piece of nx x ny x nz points (at least 2 each),
    // measured by up to `threads` threads at once (each has its own scratch:
    // two rows of ny / kCells lines, made and touched here).
    void resize(std::int64_t nx, std::int64_t ny, std::int64_t nz, int threads = 1);
    bool sized_for(std::int64_t nx, std::int64_t ny, std::int64_t nz, int threads = 1) const {
        return nx == nx_ && ny == ny_ && nz == nz_ && threads <= threads_;
    }
    std::int64_t bricks_x() const { return bx_; }
    std::int64_t bricks_y() const { return by_; }
    std::int64_t bricks_z() const { return bz_; }
    std::int64_t bricks() const { return bx_ * by_ * bz_; }

    // Fills the ranges of the bricks in layers [z_begin, z_end) of bricks
    // from `values` (x fastest, then y, then z): callers split the layers
    // between threads, each passing its number (0..threads - 1 of resize).
    // NaN values are left out of the ranges.
    void measure(const float* values, std::int64_t z_begin, std::int64_t z_end, int thread = 0);

    // Marks each brick that has an opacity somewhere in its range under
    // `table` (once a frame: the transfer function may change).
    void classify(const TransferTable& table);
    bool visible(std::int64_t x, std::int64_t y, std::int64_t z) const { return visible_[(z * by_ + y) * bx_ + x] != 0; }
    // One byte a brick, x fastest, then y, then z; readable 3 bytes past the
    // last brick (the eight-lane kernel reads the bytes four at a time).
    const std::uint8_t* visible_data() const { return visible_.data(); }
    float least(std::int64_t b) const { return least_[b]; }
    float greatest(std::int64_t b) const { return greatest_[b]; }

private:
    std::int64_t nx_ = 0, ny_ = 0, nz_ = 0, bx_ = 0, by_ = 0, bz_ = 0;
    int threads_ = 0;
    std::vector<float> least_, greatest_;
    // measure()'s scratch, a thread after another: for each row of bricks
    // along y, the least and the greatest of each x over the layer's lines.
    std::vector<float> scratch_;
    std::vector<std::uint8_t> visible_;
};

}  // namespace slabcast::render
