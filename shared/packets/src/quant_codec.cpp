#include "slabcast/quant_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace slabcast::run {
namespace {

std::uint32_t zigzag(std::int32_t d) { return (static_cast<std::uint32_t>(d) << 1) ^ static_cast<std::uint32_t>(d >> 31); }
std::int32_t unzigzag(std::uint32_t z) { return static_cast<std::int32_t>(z >> 1) ^ -static_cast<std::int32_t>(z & 1); }

// A block's bytes at `width` bits a value (n * width bits, whole bytes).
std::size_t block_bytes(int n, int width) { return (static_cast<std::size_t>(n) * static_cast<std::size_t>(width) + 7) / 8; }

// The step between levels: the smallest float32 q with lo + q * levels >= hi
// (a denormal at least, for a range too small for q to be normal).
float level_step(float lo, float hi, int levels) {
    const double span = static_cast<double>(hi) - static_cast<double>(lo);
    if (!(span > 0)) return 0.0f;
    auto q = static_cast<float>(span / levels);
    if (static_cast<double>(q) * levels < span) q = std::nextafter(q, std::numeric_limits<float>::infinity());
    return std::max(q, std::numeric_limits<float>::denorm_min());
}

}  // namespace

QuantPacket quant_encode(const float* values, std::int64_t available, int bits, std::uint8_t* out,
                         std::size_t capacity) {
    int n = static_cast<int>(std::min<std::int64_t>(available, kMaxQuantValues));
    if (n < 1 || capacity < kQuantHeaderBytes + 1 + block_bytes(1, bits + 1)) return {};
    // The range, and whether every value is finite (x * 0 is NaN for NaN and
    // the infinities); a run stops before its first value that is not.
    float lo = values[0], hi = values[0], nonfinite = 0.0f;
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, values[i]);
        hi = std::max(hi, values[i]);
        nonfinite += values[i] * 0.0f;
    }
    if (nonfinite != 0.0f) {
        int finite = 0;
        while (finite < n && std::isfinite(values[finite])) ++finite;
        if (finite == 0) return {};
        return quant_encode(values, finite, bits, out, capacity);
    }
    const int levels = (1 << bits) - 1;
    const float q = level_step(lo, hi, levels);
    const double inverse = q > 0 ? 1.0 / static_cast<double>(q) : 0.0;
    std::memcpy(out, &lo, 4);
    std::memcpy(out + 4, &q, 4);
    std::size_t at = kQuantHeaderBytes;
    std::int32_t previous = 0;
    int done = 0;
    while (done < n) {
        const int m = std::min(kQuantBlock, n - done);
        std::uint32_t z[kQuantBlock];
        std::int32_t level[kQuantBlock];
        // x >= lo, so adding a half and truncating rounds to the nearest level.
        // (1 / q rounded may carry the top value a level past the last: kept at the last.)
        for (int j = 0; j < m; ++j)
            level[j] = std::min(levels, static_cast<std::int32_t>((static_cast<double>(values[done + j]) - lo) * inverse + 0.5));
        std::uint32_t any = 0;
        for (int j = 0; j < m; ++j) {
            z[j] = zigzag(level[j] - (j ? level[j - 1] : previous));
            any |= z[j];
        }
        const int width = any ? 32 - __builtin_clz(any) : 0;
        const std::size_t bytes = block_bytes(m, width);
        if (at + 1 + bytes > capacity) break;
        out[at++] = static_cast<std::uint8_t>(width);
        // Packed into a scratch of whole words, then the block's bytes copied.
        std::uint8_t packed[kQuantBlock * 4 + 8];
        std::size_t put = 0;
        std::uint64_t acc = 0;
        int fill = 0;
        for (int j = 0; j < m; ++j) {
            acc |= static_cast<std::uint64_t>(z[j]) << fill;
            fill += width;
            if (fill >= 32) {
                const auto word = static_cast<std::uint32_t>(acc);
                std::memcpy(packed + put, &word, 4);
                put += 4;
                acc >>= 32;
                fill -= 32;
            }
        }
        const auto word = static_cast<std::uint32_t>(acc);
        std::memcpy(packed + put, &word, 4);
        std::memcpy(out + at, packed, bytes);
        at += bytes;
        previous = level[m - 1];
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
    std::uint32_t out_of_range = 0;
    for (int done = 0; done < count; done += kQuantBlock) {
        const int m = std::min(kQuantBlock, count - done);
        if (at >= bytes) return false;
        const int width = payload[at++];
        if (width > bits + 1) return false;
        const std::size_t need = block_bytes(m, width);
        if (need > bytes - at) return false;
        std::uint8_t packed[kQuantBlock * 4 + 8] = {};
        std::memcpy(packed, payload + at, need);
        at += need;
        const std::uint64_t mask = (std::uint64_t{1} << width) - 1;
        std::uint64_t acc = 0;
        int fill = 0;
        std::size_t got = 0;
        std::int32_t levels_here[kQuantBlock];
        for (int j = 0; j < m; ++j) {
            if (fill < width) {
                std::uint32_t word = 0;
                std::memcpy(&word, packed + got, 4);
                got += 4;
                acc |= static_cast<std::uint64_t>(word) << fill;
                fill += 32;
            }
            level += unzigzag(static_cast<std::uint32_t>(acc & mask));
            acc >>= width;
            fill -= width;
            levels_here[j] = level;
            out_of_range |= static_cast<std::uint32_t>(level) > levels;
        }
        // The bits after the block's last value are zero, as the encoder leaves them.
        if (m * width % 8 && (packed[need - 1] >> (m * width % 8)) != 0) return false;
        for (int j = 0; j < m; ++j)
            values[done + j] = static_cast<float>(static_cast<double>(lo) + static_cast<double>(levels_here[j]) * q);
    }
    return at == bytes && !out_of_range;
}

}  // namespace slabcast::run
