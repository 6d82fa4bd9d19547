#include "slabcast/value_range.h"

#include <emmintrin.h>

#include <cmath>
#include <cstring>

namespace slabcast {
namespace {

// MINPS and MAXPS return their second operand when either is NaN: with the
// running range second, a NaN leaves it as it was.
MinMax reduce(__m128 lo, __m128 hi) {
    alignas(16) float l[4], h[4];
    _mm_store_ps(l, lo);
    _mm_store_ps(h, hi);
    MinMax r;
    for (int i = 0; i < 4; ++i) r.merge(MinMax{l[i], h[i]});
    return r;
}

void add(MinMax& r, float x) {
    r.lo = x < r.lo ? x : r.lo;  // a NaN compares false: left out
    r.hi = x > r.hi ? x : r.hi;
}

}  // namespace

MinMax min_max(const float* v, std::size_t n) {
    // Two accumulators each: the loop is bound by the compares' latency otherwise.
    const float inf = std::numeric_limits<float>::infinity();
    __m128 lo0 = _mm_set1_ps(inf), lo1 = lo0, hi0 = _mm_set1_ps(-inf), hi1 = hi0;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128 a = _mm_loadu_ps(v + i), b = _mm_loadu_ps(v + i + 4);
        lo0 = _mm_min_ps(a, lo0);
        hi0 = _mm_max_ps(a, hi0);
        lo1 = _mm_min_ps(b, lo1);
        hi1 = _mm_max_ps(b, hi1);
    }
    MinMax r = reduce(_mm_min_ps(lo0, lo1), _mm_max_ps(hi0, hi1));
    for (; i < n; ++i) add(r, v[i]);
    return r;
}

MinMax copy_min_max(float* out, const std::uint8_t* in, std::size_t stride, std::size_t n) {
    MinMax r;
    std::size_t i = 0;
    auto one = [&](std::size_t k) {
        float x;
        std::memcpy(&x, in + stride * k, 4);
        out[k] = x;
        add(r, x);
    };
    // Up to a 16-byte boundary of `out`, where the stores past the cache go.
    for (; i < n && (reinterpret_cast<std::uintptr_t>(out + i) & 15); ++i) one(i);
    const float inf = std::numeric_limits<float>::infinity();
    __m128 lo = _mm_set1_ps(inf), hi = _mm_set1_ps(-inf);
    if (stride == sizeof(float)) {
        // Eight at a time into two pairs of accumulators, as min_max.
        __m128 lo1 = lo, hi1 = hi;
        for (; i + 8 <= n; i += 8) {
            const __m128 a = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * i)));
            const __m128 b = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * i + 16)));
            _mm_stream_ps(out + i, a);
            _mm_stream_ps(out + i + 4, b);
            lo = _mm_min_ps(a, lo);
            hi = _mm_max_ps(a, hi);
            lo1 = _mm_min_ps(b, lo1);
            hi1 = _mm_max_ps(b, hi1);
        }
        lo = _mm_min_ps(lo1, lo);
        hi = _mm_max_ps(hi1, hi);
        for (; i + 4 <= n; i += 4) {
            const __m128 a = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * i)));
            _mm_stream_ps(out + i, a);
            lo = _mm_min_ps(a, lo);
            hi = _mm_max_ps(a, hi);
        }
    } else if (stride == 16) {
        // Four records {x, y, z, v} at once: their values gathered by two unpacks and a move.
        const std::uint8_t* record = in - 12;
        for (; i + 4 <= n; i += 4) {
            auto load = [&](std::size_t k) {
                return _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(record + 16 * (i + k))));
            };
            const __m128 low = _mm_unpackhi_ps(load(0), load(1));   // z0 z1 v0 v1
            const __m128 high = _mm_unpackhi_ps(load(2), load(3));  // z2 z3 v2 v3
            const __m128 x = _mm_movehl_ps(high, low);              // v0 v1 v2 v3
            _mm_stream_ps(out + i, x);
            lo = _mm_min_ps(x, lo);
            hi = _mm_max_ps(x, hi);
        }
    }
    r.merge(reduce(lo, hi));
    for (; i < n; ++i) one(i);
    return r;
}

ValueRanges value_ranges(const float* v, std::size_t n) {
    const float inf = std::numeric_limits<float>::infinity();
    const __m128 pinf = _mm_set1_ps(inf), ninf = _mm_set1_ps(-inf);
    const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128 lo = pinf, hi = ninf, flo = pinf, fhi = ninf;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m128 x = _mm_loadu_ps(v + i);
        lo = _mm_min_ps(x, lo);
        hi = _mm_max_ps(x, hi);
        // |x| < inf: finite (false for NaN and for infinities). The others
        // become the neutral element of each side.
        const __m128 finite = _mm_cmplt_ps(_mm_and_ps(x, magnitude), pinf);
        flo = _mm_min_ps(_mm_or_ps(_mm_and_ps(finite, x), _mm_andnot_ps(finite, pinf)), flo);
        fhi = _mm_max_ps(_mm_or_ps(_mm_and_ps(finite, x), _mm_andnot_ps(finite, ninf)), fhi);
    }
    ValueRanges r{reduce(lo, hi), reduce(flo, fhi)};
    for (; i < n; ++i) {
        add(r.values, v[i]);
        if (std::isfinite(v[i])) add(r.finite, v[i]);
    }
    return r;
}

AgeRange age_range(const std::uint8_t* a, std::size_t n) {
    __m128i lo = _mm_set1_epi8(static_cast<char>(0xff)), hi = _mm_setzero_si128();
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
        lo = _mm_min_epu8(x, lo);
        hi = _mm_max_epu8(x, hi);
    }
    alignas(16) std::uint8_t l[16], h[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(l), lo);
    _mm_store_si128(reinterpret_cast<__m128i*>(h), hi);
    AgeRange r;
    for (int k = 0; k < 16; ++k) r.merge(AgeRange{l[k], h[k]});
    for (; i < n; ++i) r.merge(AgeRange{a[i], a[i]});
    return r;
}

}  // namespace slabcast
