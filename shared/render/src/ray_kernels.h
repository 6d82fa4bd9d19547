// What the ray marcher's kernels share: a ray set up in a piece's index
// space, and the per-frame inputs every sample reads. Private to
// shared/render: ray_march.cpp casts one ray at a time (any x86-64), and
// ray_march_avx2.cpp eight at once where the CPU has AVX2 and FMA.
#pragma once

#include "slabcast/render/ray_march.h"

namespace slabcast::render::detail {

// A ray in the piece's index space (point (i, j, k) at i, j, k), its
// parameter t in world units from the near plane: at t the ray is at o + t d.
struct Ray {
    double o[3], d[3];
    double enter, leave;  // where it is inside the piece: [enter, leave)
};

// The ray through normalized device coordinates (x, y), or false where it
// misses the piece's box.
bool ray_through(const Piece& p, const Rays& rays, double x, double y, Ray& ray);

// Where the ray leaves brick (bx, by, bz) (brick[3]).
double brick_exit(const Ray& ray, const std::int64_t brick[3]);

struct Frame {
    const Piece& piece;
    const TransferTable& table;
    const BrickGrid& bricks;
    const March& march;
};

// Front to back along one ray: premultiplied red, green, blue, alpha.
void composite(const Frame& frame, const Ray& ray, float out[4]);

// The same for eight rays at once (hit[i]: ray i meets the piece); only
// where cpu_has_avx2_fma() (slabcast/cpu_features.h) and the piece has
// fewer than 2^31 points.
void composite8_avx2(const Frame& frame, const Ray rays[8], const bool hit[8], float out[8][4]);

}  // namespace slabcast::render::detail
