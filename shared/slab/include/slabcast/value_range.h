// The range of a run of float32 values as VTK reports an array's range (NaN
// left out; the finite range leaves out infinities too), and of age bytes.
// One SSE2 pass: the reader measures a step it shows with these, and the
// receiver measures each packet's values as it places them, so that a step's
// range is known when it is published (slab_file.h, BufferRanges) and a reader
// need not read the step once more for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace slabcast {

struct MinMax {
    float lo = std::numeric_limits<float>::infinity();
    float hi = -std::numeric_limits<float>::infinity();
    // No value counted (or only NaN).
    bool empty() const { return !(lo <= hi); }
    // A value counted was an infinity.
    bool infinite() const { return !empty() && (lo == -std::numeric_limits<float>::infinity() ||
                                                hi == std::numeric_limits<float>::infinity()); }
    void merge(const MinMax& o) {
        lo = o.lo < lo ? o.lo : lo;
        hi = o.hi > hi ? o.hi : hi;
    }
};

struct ValueRanges {
    MinMax values;  // NaN left out
    MinMax finite;  // NaN and infinities left out
    void merge(const ValueRanges& o) {
        values.merge(o.values);
        finite.merge(o.finite);
    }
};

// `n` values from `v`, NaN left out.
MinMax min_max(const float* v, std::size_t n);
// Copies `n` values to `out` and returns their range (NaN left out), in one
// pass, storing past the cache (the receiver's slab is read by another
// process after publication, not by this thread now; the caller fences with
// _mm_sfence before publishing). `stride` 4: packed values at `in`, any
// alignment; 16: the last 4 bytes of 16-byte records (quad records), `in`
// pointing at the first record's value, whose 12 bytes before are readable;
// any other stride: one value at a time.
MinMax copy_min_max(float* out, const std::uint8_t* in, std::size_t stride, std::size_t n);
// Both ranges of `n` values from `v`, in one pass.
ValueRanges value_ranges(const float* v, std::size_t n);

struct AgeRange {
    std::uint8_t lo = 255, hi = 0;
    bool empty() const { return lo > hi; }
    void merge(const AgeRange& o) {
        lo = o.lo < lo ? o.lo : lo;
        hi = o.hi > hi ? o.hi : hi;
    }
};
AgeRange age_range(const std::uint8_t* a, std::size_t n);

}  // namespace slabcast
