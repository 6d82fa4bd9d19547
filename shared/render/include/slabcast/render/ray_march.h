// A CPU ray marcher for one piece of a volume, in place: it reads the
// piece's values where they lie (the reader maps the received slabs; no
// texture, no copy), samples each ray at a fixed distance with trilinear
// interpolation, composites front to back with the opacity corrected for
// that distance, stops a ray once it is all but opaque and steps over bricks
// the transfer function leaves empty. Each MPI rank renders only its piece
// and ParaView's IceT composites the pieces in depth order (sort-last, as at
// SC11: Balman et al., 2012, section 4.4), so samples lie on one lattice
// along each ray whichever piece takes them: a ray cut at a piece boundary
// gives the same samples as an uncut one.
#pragma once

#include "slabcast/render/brick_grid.h"
#include "slabcast/render/transfer_table.h"
#include "slabcast/render/worker_pool.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace slabcast::render {

struct Piece {
    const float* values = nullptr;  // x fastest, then y, then z (VTK's point order)
    std::int64_t nx = 0, ny = 0, nz = 0;
    double origin[3] = {0, 0, 0};   // the world position of the piece's first point
    double spacing[3] = {1, 1, 1};
    // The whole volume's box in world coordinates, every rank's pieces
    // together: each ray's samples start where it enters it. Unset (lo >
    // hi): the piece's own box.
    double whole_lo[3] = {1, 1, 1}, whole_hi[3] = {0, 0, 0};
    // Sets the whole box to the piece's own.
    void whole_is_piece();
};

// The camera: normalized device coordinates (x, y, z in [-1, 1], OpenGL's)
// to world coordinates, row-major, as vtkCamera's composite projection
// inverted.
struct Rays {
    double to_world[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
};

struct March {
    double sample_distance = 1.0;  // world units between samples along a ray
    bool linear = true;            // trilinear interpolation, else the nearest point
    float opaque = 0.99f;          // a ray stops once this opaque
    bool skip_empty = true;        // step over bricks with no opacity (off: to measure what it saves)
    // Measure the bricks for this frame where they are not yet. Off for a
    // new step's coarse frames: measuring reads every value of the piece,
    // several times what a frame at 1/4 of the pixels and 4x the sample
    // distance costs, so those march without skipping and the first frame at
    // full resolution measures.
    bool may_measure = true;
    bool vectorised = true;        // eight rays at once where the CPU has AVX2 (off: one at a time)
    // Eight rays at once ask for the values their samples a few steps on
    // will read (off: to measure what it saves; bench_ray_march).
    bool prefetch = true;
    // Asked between tiles, by the calling thread, at most every kStopCheck:
    // true stops the frame (a live view's step was replaced by a newer one).
    std::function<bool()> stop;
};
constexpr std::chrono::milliseconds kStopCheck{2};

// Premultiplied 8-bit red, green, blue, alpha; row 0 at the bottom (OpenGL's).
struct Image {
    int width = 0, height = 0;
    std::vector<std::uint8_t> rgba;
    void resize(int w, int h);  // keeps its memory when it shrinks or stays
};

class RayMarcher {
public:
    // Skipping empty bricks pays for measuring them (every value read once a
    // step: about 0.06 s a GiB a core, bench_bricks) only where the transfer
    // function leaves at least this share of its range without opacity.
    static constexpr double kSkipFrom = 1.0 / 64;

    // The piece's values changed (a new step): its bricks are measured again
    // when a frame next skips by them.
    void new_values() { measured_ = false; }
    bool measured() const { return measured_; }
    // Measures the piece's bricks now, on every thread of `pool`; false
    // (and not measured) when `stop` stopped it (March::stop).
    bool measure(const Piece& piece, WorkerPool& pool, const std::function<bool()>& stop = {});
    const BrickGrid& bricks() const { return bricks_; }

    // Renders the piece as `image` (its size set by the caller) sees it,
    // measuring its bricks first where skipping pays, they are not yet and
    // `march` may.
    // False when `march.stop` stopped it: the image is then part drawn.
    bool render(const Piece& piece, const TransferTable& table, const Rays& rays, const March& march, Image& image,
                WorkerPool& pool);

    static constexpr int kTile = 16;  // pixels a side of the tiles the threads take

private:
    BrickGrid bricks_;
    bool measured_ = false;
};

}  // namespace slabcast::render
