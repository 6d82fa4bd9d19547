// Eight rays at once with AVX2 and FMA: the same samples, interpolation,
// table and compositing as composite() in ray_march.cpp, in eight float
// lanes. Compiled for AVX2 (shared/CMakeLists.txt) and called only where
// the CPU has it, so the library still runs on any x86-64.
#include "ray_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace slabcast::render::detail {

namespace {

__m256 lanes(const float v[8]) { return _mm256_loadu_ps(v); }

// Two neighbouring floats (at index i and i + 1 from `base`) for each of the
// eight lanes: four 64-bit gathers' worth of loads where eight 32-bit ones
// took twice as many (the gathers bound the frame). Lanes 0, 1, 4, 5 go
// through one gather and 2, 3, 6, 7 through the other, so that one shuffle
// within each 128-bit half puts every lane back in its place.
struct Pair {
    __m256 first, second;  // the float at i, and at i + 1
};
Pair gather_pairs(const float* base, __m256i index) {
    const __m128i low = _mm256_castsi256_si128(index), high = _mm256_extracti128_si256(index, 1);
    // The masked form, every lane on: the plain one leaves GCC 12 warning of its undefined source.
    const __m256d none = _mm256_setzero_pd(), all = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    const auto* at = reinterpret_cast<const double*>(base);
    const __m256 a = _mm256_castpd_ps(_mm256_mask_i32gather_pd(none, at, _mm_unpacklo_epi64(low, high), all, 4));
    const __m256 b = _mm256_castpd_ps(_mm256_mask_i32gather_pd(none, at, _mm_unpackhi_epi64(low, high), all, 4));
    return {_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))};
}

// How far ahead (in samples) each lane asks for the values it will read.
// A 1024^3 piece is many times the L3, and a ray crosses a z plane (4 MiB
// apart) almost every sample, so without it each sample waited on memory:
// bench_ray_march at 1024^3, 1280x720, on the 2 vCPUs of the Intel Xeon VM of
// 2026-12-07, 1.6-1.8 s a frame against 3.3-3.4 s without. Tried there too:
// 8 to 32 samples ahead alike; into L1 instead of L2 about 20% slower, and
// every other lane only about 40% slower. At 256^3, which fits the L3, it
// costs nothing measurable.
constexpr float kAhead = 16.0f;

// Asks for the four rows of values (y and y + 1, z and z + 1) a trilinear
// sample at each lane's point `index` reads, into L2.
void prefetch_rows(const float* values, __m256i index, int row, int plane) {
    alignas(32) int at[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(at), index);
    for (const int i : at) {
        const char* q = reinterpret_cast<const char*>(values + i);
        _mm_prefetch(q, _MM_HINT_T1);
        _mm_prefetch(q + 4 * row, _MM_HINT_T1);
        _mm_prefetch(q + 4 * static_cast<std::ptrdiff_t>(plane), _MM_HINT_T1);
        _mm_prefetch(q + 4 * (static_cast<std::ptrdiff_t>(plane) + row), _MM_HINT_T1);
    }
}

}  // namespace

void composite8_avx2(const Frame& frame, const Ray rays[8], const bool hit[8], float out[8][4]) {
    const Piece& p = frame.piece;
    const TransferTable& table = frame.table;
    const March& march = frame.march;
    const double dt = march.sample_distance;
    constexpr float kNever = std::numeric_limits<float>::infinity();

    // Each lane's ray in float, and its samples k in [first, end) on the lattice t = k dt.
    alignas(32) float o[3][8], d[3][8], first[8], end[8];
    double k_low = std::numeric_limits<double>::infinity(), k_high = -k_low;
    for (int l = 0; l < 8; ++l) {
        for (int c = 0; c < 3; ++c) {
            o[c][l] = hit[l] ? static_cast<float>(rays[l].o[c]) : 0.0f;
            d[c][l] = hit[l] ? static_cast<float>(rays[l].d[c]) : 0.0f;
        }
        if (!hit[l]) {
            first[l] = kNever;
            end[l] = -kNever;
            continue;
        }
        const double a = std::ceil(rays[l].enter / dt), b = std::ceil(rays[l].leave / dt);
        first[l] = static_cast<float>(a);
        end[l] = static_cast<float>(b);
        k_low = std::min(k_low, a);
        k_high = std::max(k_high, b);
    }
    const __m256 ox = lanes(o[0]), oy = lanes(o[1]), oz = lanes(o[2]);
    const __m256 dx = lanes(d[0]), dy = lanes(d[1]), dz = lanes(d[2]);
    const __m256 k_first = lanes(first), k_end = lanes(end);
    const __m256 step = _mm256_set1_ps(static_cast<float>(dt));
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
    const __m256 top_x = _mm256_set1_ps(static_cast<float>(p.nx - 1)), top_y = _mm256_set1_ps(static_cast<float>(p.ny - 1)),
                 top_z = _mm256_set1_ps(static_cast<float>(p.nz - 1));
    const __m256i cell_x = _mm256_set1_epi32(static_cast<int>(p.nx - 2)), cell_y = _mm256_set1_epi32(static_cast<int>(p.ny - 2)),
                  cell_z = _mm256_set1_epi32(static_cast<int>(p.nz - 2));
    const int nx = static_cast<int>(p.nx), plane = static_cast<int>(p.nx * p.ny);
    const __m256i row = _mm256_set1_epi32(nx), slice = _mm256_set1_epi32(plane);
    const __m256i bricks_x = _mm256_set1_epi32(static_cast<int>(frame.bricks.bricks_x())),
                  bricks_y = _mm256_set1_epi32(static_cast<int>(frame.bricks.bricks_y()));
    const __m256 lo = _mm256_set1_ps(table.lo()), scale = _mm256_set1_ps(table.scale());
    const __m256 last = _mm256_set1_ps(static_cast<float>(TransferTable::kEntries - 1));
    const __m256 opaque = _mm256_set1_ps(march.opaque);
    const float* values = p.values;
    const float* rgba = table.entry(0);
    const int* visible = reinterpret_cast<const int*>(frame.bricks.visible_data());

    // Each lane's point at sample k, clamped into the piece, and the cell it lies in.
    const auto point_at = [&](__m256 k, __m256& px, __m256& py, __m256& pz, __m256i& ix, __m256i& iy, __m256i& iz) {
        const __m256 t = _mm256_mul_ps(k, step);
        px = _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(t, dx, ox), zero), top_x);
        py = _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(t, dy, oy), zero), top_y);
        pz = _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(t, dz, oz), zero), top_z);
        ix = _mm256_min_epi32(_mm256_cvttps_epi32(px), cell_x);
        iy = _mm256_min_epi32(_mm256_cvttps_epi32(py), cell_y);
        iz = _mm256_min_epi32(_mm256_cvttps_epi32(pz), cell_z);
    };
    const auto index_of = [&](__m256i ix, __m256i iy, __m256i iz) {
        return _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(iz, slice), _mm256_mullo_epi32(iy, row)), ix);
    };
    const __m256 ahead = _mm256_set1_ps(kAhead);

    __m256 r = zero, g = zero, b = zero, a = zero;
    __m256 live = _mm256_cmp_ps(k_first, k_end, _CMP_LT_OQ);  // lanes not yet done
    for (double k = k_low; k < k_high; k += 1.0) {
        const __m256 kk = _mm256_set1_ps(static_cast<float>(k));
        live = _mm256_and_ps(live, _mm256_cmp_ps(kk, k_end, _CMP_LT_OQ));
        if (_mm256_movemask_ps(live) == 0) break;
        __m256 active = _mm256_and_ps(live, _mm256_cmp_ps(kk, k_first, _CMP_GE_OQ));
        if (_mm256_movemask_ps(active) == 0) continue;

        __m256 px, py, pz;
        __m256i ix, iy, iz;
        point_at(kk, px, py, pz, ix, iy, iz);

        if (march.skip_empty) {
            const __m256i brick = _mm256_add_epi32(
                _mm256_mullo_epi32(_mm256_add_epi32(_mm256_mullo_epi32(_mm256_srli_epi32(iz, BrickGrid::kShift), bricks_y),
                                                    _mm256_srli_epi32(iy, BrickGrid::kShift)),
                                   bricks_x),
                _mm256_srli_epi32(ix, BrickGrid::kShift));
            const __m256i seen = _mm256_and_si256(_mm256_i32gather_epi32(visible, brick, 1), _mm256_set1_epi32(0xff));
            const __m256 in_visible = _mm256_castsi256_ps(_mm256_cmpgt_epi32(seen, _mm256_setzero_si256()));
            const __m256 sampled = _mm256_and_ps(active, in_visible);
            if (_mm256_movemask_ps(sampled) == 0) {
                // Every lane taking a sample is in an empty brick: on to the
                // first sample past the nearest brick exit, or a lane's first.
                alignas(32) int bx[8], by[8], bz[8];
                _mm256_store_si256(reinterpret_cast<__m256i*>(bx), _mm256_srli_epi32(ix, BrickGrid::kShift));
                _mm256_store_si256(reinterpret_cast<__m256i*>(by), _mm256_srli_epi32(iy, BrickGrid::kShift));
                _mm256_store_si256(reinterpret_cast<__m256i*>(bz), _mm256_srli_epi32(iz, BrickGrid::kShift));
                const int on = _mm256_movemask_ps(active), waiting = _mm256_movemask_ps(live) & ~on;
                double next = k_high;
                for (int l = 0; l < 8; ++l) {
                    if (on & (1 << l)) {
                        const std::int64_t brick_at[3] = {bx[l], by[l], bz[l]};
                        next = std::min(next, std::ceil(brick_exit(rays[l], brick_at) / dt));
                    } else if (waiting & (1 << l)) {
                        next = std::min(next, static_cast<double>(first[l]));
                    }
                }
                k = std::max(k, next - 1.0);
                continue;
            }
            active = sampled;
        }

        const __m256i base = index_of(ix, iy, iz);
        if (march.prefetch) {
            __m256 qx, qy, qz;
            __m256i jx, jy, jz;
            point_at(_mm256_add_ps(kk, ahead), qx, qy, qz, jx, jy, jz);
            prefetch_rows(values, index_of(jx, jy, jz), nx, plane);
        }
        __m256 value;
        if (march.linear) {
            const __m256 fx = _mm256_sub_ps(px, _mm256_cvtepi32_ps(ix));
            const __m256 fy = _mm256_sub_ps(py, _mm256_cvtepi32_ps(iy));
            const __m256 fz = _mm256_sub_ps(pz, _mm256_cvtepi32_ps(iz));
            const Pair p00 = gather_pairs(values, base), p10 = gather_pairs(values + nx, base);
            const Pair p01 = gather_pairs(values + plane, base), p11 = gather_pairs(values + plane + nx, base);
            const __m256 v000 = p00.first, v100 = p00.second, v010 = p10.first, v110 = p10.second;
            const __m256 v001 = p01.first, v101 = p01.second, v011 = p11.first, v111 = p11.second;
            const __m256 x00 = _mm256_fmadd_ps(fx, _mm256_sub_ps(v100, v000), v000);
            const __m256 x10 = _mm256_fmadd_ps(fx, _mm256_sub_ps(v110, v010), v010);
            const __m256 x01 = _mm256_fmadd_ps(fx, _mm256_sub_ps(v101, v001), v001);
            const __m256 x11 = _mm256_fmadd_ps(fx, _mm256_sub_ps(v111, v011), v011);
            const __m256 y0 = _mm256_fmadd_ps(fy, _mm256_sub_ps(x10, x00), x00);
            const __m256 y1 = _mm256_fmadd_ps(fy, _mm256_sub_ps(x11, x01), x01);
            value = _mm256_fmadd_ps(fz, _mm256_sub_ps(y1, y0), y0);
        } else {
            const auto up = [&](__m256 position, __m256i cell) {  // 1 where the nearer point is the next one
                return _mm256_srli_epi32(_mm256_castps_si256(_mm256_cmp_ps(
                                             _mm256_sub_ps(position, _mm256_cvtepi32_ps(cell)), half, _CMP_GE_OQ)),
                                         31);
            };
            const __m256i nearest = _mm256_add_epi32(
                base, _mm256_add_epi32(up(px, ix), _mm256_add_epi32(_mm256_mullo_epi32(up(py, iy), row),
                                                                    _mm256_mullo_epi32(up(pz, iz), slice))));
            value = _mm256_i32gather_ps(values, nearest, 4);
        }

        // The table entry, rounded as TransferTable::index() rounds (a NaN to entry 0).
        const __m256 position = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_sub_ps(value, lo), scale), zero), last);
        const __m256i entry = _mm256_slli_epi32(_mm256_cvttps_epi32(_mm256_add_ps(position, half)), 2);
        const Pair blue_alpha = gather_pairs(rgba + 2, entry);
        const __m256 alpha = blue_alpha.second;
        const __m256 weight = _mm256_and_ps(active, _mm256_sub_ps(one, a));
        if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_mul_ps(weight, alpha), zero, _CMP_GT_OQ)) == 0) continue;
        const Pair red_green = gather_pairs(rgba, entry);
        r = _mm256_fmadd_ps(weight, red_green.first, r);
        g = _mm256_fmadd_ps(weight, red_green.second, g);
        b = _mm256_fmadd_ps(weight, blue_alpha.first, b);
        a = _mm256_fmadd_ps(weight, alpha, a);
        live = _mm256_and_ps(live, _mm256_cmp_ps(a, opaque, _CMP_LT_OQ));
    }
    alignas(32) float cr[8], cg[8], cb[8], ca[8];
    _mm256_store_ps(cr, r);
    _mm256_store_ps(cg, g);
    _mm256_store_ps(cb, b);
    _mm256_store_ps(ca, a);
    for (int l = 0; l < 8; ++l) {
        out[l][0] = cr[l];
        out[l][1] = cg[l];
        out[l][2] = cb[l];
        out[l][3] = ca[l];
    }
}

}  // namespace slabcast::render::detail
