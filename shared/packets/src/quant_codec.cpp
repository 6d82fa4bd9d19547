#include "slabcast/quant_codec.h"

#include "quant_kernels.h"
#include "slabcast/cpu_features.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

// The hot loops twice, for AVX2 and for plain x86-64, the one the CPU runs
// chosen when the library loads (GCC's function multiversioning).
#if defined(__x86_64__) && !defined(__clang__)
#define SLABCAST_QUANT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SLABCAST_QUANT_CLONES
#endif

namespace slabcast::run {
namespace {

std::uint32_t zigzag(std::int32_t d) { return (static_cast<std::uint32_t>(d) << 1) ^ static_cast<std::uint32_t>(d >> 31); }
std::int32_t unzigzag(std::uint32_t z) { return static_cast<std::int32_t>(z >> 1) ^ -static_cast<std::int32_t>(z & 1); }

// A block's bytes at `width` bits a value (n * width bits, whole bytes).
std::size_t block_bytes(int n, int width) { return (static_cast<std::size_t>(n) * static_cast<std::size_t>(width) + 7) / 8; }

// 32 values of W bits each to 4 * W bytes and back, unrolled for each W so
// that every shift is a constant and no value waits for the one before (bit
// packing as FastPFor does it: Lemire and Boytsov, 2015).
template <int W>
void pack(const std::uint32_t* z, std::uint8_t* out) {
    std::uint64_t acc = 0;
    int fill = 0;
#pragma GCC unroll 32
    for (int j = 0; j < kQuantBlock; ++j) {
        acc |= static_cast<std::uint64_t>(z[j]) << fill;
        fill += W;
        if (fill >= 32) {
            const auto word = static_cast<std::uint32_t>(acc);
            std::memcpy(out, &word, 4);
            out += 4;
            acc >>= 32;
            fill -= 32;
        }
    }
}

template <int W>
void unpack(const std::uint8_t* in, std::uint32_t* z) {
    constexpr std::uint64_t kMask = (std::uint64_t{1} << W) - 1;
    std::uint64_t acc = 0;
    int fill = 0;
#pragma GCC unroll 32
    for (int j = 0; j < kQuantBlock; ++j) {
        if (fill < W) {
            std::uint32_t word = 0;
            std::memcpy(&word, in, 4);
            in += 4;
            acc |= static_cast<std::uint64_t>(word) << fill;
            fill += 32;
        }
        z[j] = static_cast<std::uint32_t>(acc & kMask);
        acc >>= W;
        fill -= W;
    }
}

constexpr int kMostWidth = kMaxQuantBits + 1;

// The kernels allow_quant_kernels() allows at most. Read once a call:
// relaxed, since a test sets it between calls.
std::atomic<QuantKernels> g_allowed{QuantKernels::Avx2};

using PackFn = void (*)(const std::uint32_t*, std::uint8_t*);
using UnpackFn = void (*)(const std::uint8_t*, std::uint32_t*);
template <std::size_t... W>
constexpr std::array<PackFn, sizeof...(W)> packers(std::index_sequence<W...>) {
    return {pack<static_cast<int>(W)>...};
}
template <std::size_t... W>
constexpr std::array<UnpackFn, sizeof...(W)> unpackers(std::index_sequence<W...>) {
    return {unpack<static_cast<int>(W)>...};
}
constexpr auto kPack = packers(std::make_index_sequence<kMostWidth + 1>());
constexpr auto kUnpack = unpackers(std::make_index_sequence<kMostWidth + 1>());

// The step between levels: the smallest float32 q with lo + q * levels >= hi
// (a denormal at least, for a range too small for q to be normal).
float level_step(float lo, float hi, int levels) {
    const double span = static_cast<double>(hi) - static_cast<double>(lo);
    if (!(span > 0)) return 0.0f;
    auto q = static_cast<float>(span / levels);
    if (static_cast<double>(q) * levels < span) q = std::nextafter(q, std::numeric_limits<float>::infinity());
    return std::max(q, std::numeric_limits<float>::denorm_min());
}

struct Range {
    float lo, hi;
    bool finite;
};
// A float32's bits as an int32 that orders as the float does (negative
// values' magnitude bits flipped); its own inverse. Integer minima and maxima
// vectorise where float ones do not (a float reduction's order matters to
// the compiler, for NaN).
std::int32_t ordered(std::int32_t bits) { return bits ^ ((bits >> 31) & 0x7fffffff); }

// One pass: the range, and whether every value is finite (its bits below
// the sign under those of infinity).
SLABCAST_QUANT_CLONES Range range_of(const float* values, int n) {
    std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = std::numeric_limits<std::int32_t>::min();
    std::int32_t largest = 0;
    for (int i = 0; i < n; ++i) {
        std::int32_t u = 0;
        std::memcpy(&u, values + i, 4);
        largest = std::max(largest, u & 0x7fffffff);
        lo = std::min(lo, ordered(u));
        hi = std::max(hi, ordered(u));
    }
    Range r{0, 0, largest < 0x7f800000};
    lo = ordered(lo);
    hi = ordered(hi);
    std::memcpy(&r.lo, &lo, 4);
    std::memcpy(&r.hi, &hi, 4);
    return r;
}

// One block's zigzagged level differences, `previous` the level before it;
// a short block is padded with its last level (differences of 0). Returns
// their OR; `previous` becomes the block's last level.
SLABCAST_QUANT_CLONES std::uint32_t block_differences(const float* values, int m, float lo, double inverse,
                                                      std::int32_t levels, std::int32_t& previous,
                                                      std::uint32_t* z) {
    std::int32_t level[kQuantBlock + 1];
    level[0] = previous;
    // x >= lo, so adding a half and truncating rounds to the nearest level
    // (1 / q rounded may carry the top value a level past the last: kept at the last).
    for (int j = 0; j < m; ++j)
        level[j + 1] =
            std::min(levels, static_cast<std::int32_t>((static_cast<double>(values[j]) - lo) * inverse + 0.5));
    for (int j = m; j < kQuantBlock; ++j) level[j + 1] = level[m];
    std::uint32_t any = 0;
    for (int j = 0; j < kQuantBlock; ++j) {
        z[j] = zigzag(level[j + 1] - level[j]);
        any |= z[j];
    }
    previous = level[m];
    return any;
}

// A block's values from its zigzagged differences; false when one lies
// outside levels 0..`levels`. Each value is lo + level * q rounded once
// (a fused multiply-add), as the vector kernel computes it, so that both
// give the same values bit for bit.
bool block_values(const std::uint32_t* z, int m, float lo, float q, std::uint32_t levels, std::int32_t& level,
                  float* values) {
    bool in_range = true;
    for (int j = 0; j < m; ++j) {
        level += unzigzag(z[j]);
        in_range &= static_cast<std::uint32_t>(level) <= levels;
        values[j] = std::fma(static_cast<float>(level), q, lo);
    }
    return in_range;
}

// Where the top level lies past float32's largest (a range reaching it), a
// value rounded to infinity there is the largest, which is nearer than the
// level; tested once a block, so that the block's loop stays vectorised.
void keep_finite(float* values, int m, float lo, float q, std::uint32_t levels) {
    constexpr double kLargest = std::numeric_limits<float>::max();
    if (static_cast<double>(lo) + static_cast<double>(levels) * q > kLargest)
        for (int j = 0; j < m; ++j)
            if (std::isinf(values[j])) values[j] = std::numeric_limits<float>::max();
}

}  // namespace

QuantKernels allow_quant_kernels(QuantKernels most) {
    g_allowed.store(most, std::memory_order_relaxed);
    return quant_kernels();
}

QuantKernels quant_kernels() {
    return g_allowed.load(std::memory_order_relaxed) == QuantKernels::Avx2 && cpu_has_avx2_fma()
               ? QuantKernels::Avx2
               : QuantKernels::Portable;
}

QuantPacket quant_encode(const float* values, std::int64_t available, int bits, std::uint8_t* out,
                         std::size_t capacity) {
    const int n = static_cast<int>(std::min<std::int64_t>(available, kMaxQuantValues));
    if (n < 1 || capacity < kQuantHeaderBytes + 1 + block_bytes(1, bits + 1)) return {};
    const Range r = range_of(values, n);
    if (!r.finite) {
        // Up to the first value that is not finite; none when it is the first.
        int finite = 0;
        while (finite < n && std::isfinite(values[finite])) ++finite;
        if (finite == 0) return {};
        return quant_encode(values, finite, bits, out, capacity);
    }
    const std::int32_t levels = (1 << bits) - 1;
    const float q = level_step(r.lo, r.hi, levels);
    const double inverse = q > 0 ? 1.0 / static_cast<double>(q) : 0.0;
    std::memcpy(out, &r.lo, 4);
    std::memcpy(out + 4, &q, 4);
    std::size_t at = kQuantHeaderBytes;
    std::int32_t previous = 0;
    const bool vector = quant_kernels() == QuantKernels::Avx2;
    int done = 0;
    while (done < n) {
        const int m = std::min(kQuantBlock, n - done);
        std::uint32_t z[kQuantBlock];
        std::int32_t last = previous;
        const float* block = values + done;
        const std::uint32_t any = m == kQuantBlock && vector
                                      ? detail::full_block_differences_avx2(block, r.lo, inverse, levels, last, z)
                                      : block_differences(block, m, r.lo, inverse, levels, last, z);
        const int width = any ? 32 - __builtin_clz(any) : 0;
        const std::size_t bytes = block_bytes(m, width);
        if (at + 1 + bytes > capacity) break;
        out[at++] = static_cast<std::uint8_t>(width);
        if (m == kQuantBlock && vector && width <= detail::kQuantVectorPackWidth &&
            capacity - at >= bytes + detail::kQuantWritePast) {
            detail::pack_full_block_avx2(z, width, out + at);
        } else if (m == kQuantBlock) {
            kPack[width](z, out + at);  // a full block is exactly its 4 * width bytes
        } else {
            std::uint8_t packed[4 * kMostWidth];
            kPack[width](z, packed);
            std::memcpy(out + at, packed, bytes);
        }
        at += bytes;
        previous = last;
        done += m;
    }
    if (done == 0) return {};
    return {done, at};
}

bool quant_decode(const std::uint8_t* payload, std::size_t bytes, int count, int bits, float* values) {
    if (count < 1 || count > kMaxQuantValues || bits < kMinQuantBits || bits > kMaxQuantBits ||
        bytes < kQuantHeaderBytes)
        return false;
    float lo = 0, q = 0;
    std::memcpy(&lo, payload, 4);
    std::memcpy(&q, payload + 4, 4);
    if (!std::isfinite(lo) || !std::isfinite(q) || q < 0) return false;
    const auto levels = static_cast<std::uint32_t>((1 << bits) - 1);
    std::size_t at = kQuantHeaderBytes;
    std::int32_t level = 0;
    bool in_range = true;
    const bool vector = quant_kernels() == QuantKernels::Avx2;
    // A full block near the payload's end, for the vector kernel to read past.
    std::uint8_t padded[4 * kMostWidth + detail::kQuantReadPast] = {};
    for (int done = 0; done < count; done += kQuantBlock) {
        const int m = std::min(kQuantBlock, count - done);
        if (at >= bytes) return false;
        const int width = payload[at++];
        if (width > bits + 1) return false;
        const std::size_t need = block_bytes(m, width);
        if (need > bytes - at) return false;
        if (m == kQuantBlock && vector) {
            const std::uint8_t* packed = payload + at;
            if (bytes - at < need + detail::kQuantReadPast)
                packed = static_cast<std::uint8_t*>(std::memcpy(padded, packed, need));
            in_range &= detail::decode_full_block_avx2(packed, width, lo, q, levels, level, values + done);
        } else {
            std::uint32_t z[kQuantBlock];
            if (m == kQuantBlock) {
                kUnpack[width](payload + at, z);  // exactly its 4 * width bytes
            } else {
                std::uint8_t packed[4 * kMostWidth] = {};
                std::memcpy(packed, payload + at, need);
                // The bits after the block's last value are zero, as the encoder leaves them.
                if (m * width % 8 && (packed[need - 1] >> (m * width % 8)) != 0) return false;
                kUnpack[width](packed, z);
            }
            in_range &= block_values(z, m, lo, q, levels, level, values + done);
        }
        keep_finite(values + done, m, lo, q, levels);
        at += need;
    }
    return at == bytes && in_range;
}

}  // namespace slabcast::run
