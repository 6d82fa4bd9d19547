// The quant codec's block of 32 in eight int32 and float lanes. Every
// width W goes through the same instructions: code unrolled for each W is a
// jump the branch predictor misses whenever the width changes from one
// block to the next, as it does on a real field.
//
// Decoding: eight values of W bits are W whole bytes, so each group of
// eight starts on a byte: one shuffle puts each value's four bytes in its
// lane and one shift and mask take its bits out (the shuffle, shifts and
// mask looked up by W). The running sum of the differences, which a scalar
// loop walks one value after another, takes two shifted adds a half and one
// carry between halves and between groups.
//
// Encoding: each level's difference from the one before is taken in
// registers (the levels moved up a lane, the last group's last level in
// lane 0), not from an array written and read back a lane apart. Packing
// eight values of W bits (W whole bytes) joins neighbours twice in 64-bit
// lanes, two values of W bits into one of 2W and two of those into 4W, then
// the two halves into 128 bits.
#include "quant_kernels.h"

#include "slabcast/quant_codec.h"

#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

namespace slabcast::run::detail {

namespace {

constexpr int kMostWidth = kMaxQuantBits + 1;

// Where a group of eight W-bit values lies: lanes 0-3 read the group's
// first 16 bytes, lanes 4-7 the 16 from byte W / 2 (value 7 ends at most
// 14 bytes in, so every lane's four bytes lie inside its half's 16).
struct GroupLayout {
    int high_half = 0;
    std::array<char, 32> shuffle{};  // lane k's four bytes, from its half's 16
    std::array<int, 8> shift{};      // lane k's first bit in its four bytes
    std::uint32_t mask = 0;
    constexpr explicit GroupLayout(int w) : high_half(w / 2), mask(static_cast<std::uint32_t>((1u << w) - 1)) {
        for (int k = 0; k < 8; ++k) {
            const int bit = k * w, byte = bit / 8 - (k < 4 ? 0 : high_half);
            for (int b = 0; b < 4; ++b) shuffle[static_cast<std::size_t>(4 * k + b)] = static_cast<char>(byte + b);
            shift[static_cast<std::size_t>(k)] = bit % 8;
        }
    }
};
template <std::size_t... W>
constexpr std::array<GroupLayout, sizeof...(W)> layouts(std::index_sequence<W...>) {
    return {GroupLayout(static_cast<int>(W))...};
}
// Looked up by the block's width (a load, not a jump: one loop serves every width).
constexpr auto kLayouts = layouts(std::make_index_sequence<kMostWidth + 1>());

// Lane i becomes the sum of lanes 0..i: within each 128-bit half by adding
// it shifted by one lane and then by two, then the low half's total (its
// lane 3) added to each lane of the high half.
__m256i running_sum(__m256i d) {
    d = _mm256_add_epi32(d, _mm256_slli_si256(d, 4));
    d = _mm256_add_epi32(d, _mm256_slli_si256(d, 8));
    const __m256i low_half_up = _mm256_permute2x128_si256(d, d, 0x08);  // high half: the low; low half: zero
    return _mm256_add_epi32(d, _mm256_shuffle_epi32(low_half_up, 0xFF));
}

}  // namespace

bool decode_full_block_avx2(const std::uint8_t* packed, int width, float lo, float q, std::uint32_t levels,
                            std::int32_t& level, float* values) {
    const GroupLayout& layout = kLayouts[static_cast<std::size_t>(width)];
    const __m256i shuffle = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(layout.shuffle.data()));
    const __m256i shift = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(layout.shift.data()));
    const __m256i mask = _mm256_set1_epi32(static_cast<int>(layout.mask));
    const __m256i one = _mm256_set1_epi32(1), zero = _mm256_setzero_si256();
    const __m256i top = _mm256_set1_epi32(static_cast<int>(levels)), last_lane = _mm256_set1_epi32(7);
    const __m256 q8 = _mm256_set1_ps(q), lo8 = _mm256_set1_ps(lo);
    __m256i before = _mm256_set1_epi32(level), beyond = zero;
    for (int g = 0; g < kQuantBlock / 8; ++g) {
        const std::uint8_t* group = packed + g * width;
        const __m256i bytes = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(group + layout.high_half),
                                                  reinterpret_cast<const __m128i*>(group));
        const __m256i zig = _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(bytes, shuffle), shift), mask);
        const __m256i difference =
            _mm256_xor_si256(_mm256_srli_epi32(zig, 1), _mm256_sub_epi32(zero, _mm256_and_si256(zig, one)));
        const __m256i at = _mm256_add_epi32(running_sum(difference), before);
        before = _mm256_permutevar8x32_epi32(at, last_lane);
        // Unsigned, so that a level below 0 is beyond the top as well.
        beyond = _mm256_or_si256(beyond, _mm256_xor_si256(_mm256_max_epu32(at, top), top));
        _mm256_storeu_ps(values + 8 * g, _mm256_fmadd_ps(_mm256_cvtepi32_ps(at), q8, lo8));
    }
    level = _mm256_cvtsi256_si32(before);
    return _mm256_testz_si256(beyond, beyond) != 0;
}

std::uint32_t full_block_differences_avx2(const float* values, float lo, double inverse, std::int32_t levels,
                                          std::int32_t& previous, std::uint32_t* z) {
    // x >= lo, so adding a half and truncating rounds to the nearest level
    // (1 / q rounded may carry the top value a level past the last: kept at
    // the last). Built without contraction (shared/CMakeLists.txt), so that
    // the product and the sum round as the portable loop's do.
    const __m256d lo4 = _mm256_set1_pd(lo), inverse4 = _mm256_set1_pd(inverse), half = _mm256_set1_pd(0.5);
    const auto level_of = [&](__m128 x) {
        const __m256d from_lo = _mm256_sub_pd(_mm256_cvtps_pd(x), lo4);
        return _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_mul_pd(from_lo, inverse4), half));
    };
    const __m256i top = _mm256_set1_epi32(levels), up_one_lane = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
    __m256i before = _mm256_set1_epi32(previous), any = _mm256_setzero_si256();
    for (int g = 0; g < kQuantBlock; g += 8) {
        const __m256 x = _mm256_loadu_ps(values + g);
        const __m256i level = _mm256_min_epi32(
            _mm256_set_m128i(level_of(_mm256_extractf128_ps(x, 1)), level_of(_mm256_castps256_ps128(x))), top);
        const __m256i earlier = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(level, up_one_lane), before, 0x01);
        const __m256i d = _mm256_sub_epi32(level, earlier);
        const __m256i zig = _mm256_xor_si256(_mm256_slli_epi32(d, 1), _mm256_srai_epi32(d, 31));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(z + g), zig);
        any = _mm256_or_si256(any, zig);
        before = _mm256_permutevar8x32_epi32(level, _mm256_set1_epi32(7));
    }
    previous = _mm256_cvtsi256_si32(before);
    __m128i folded = _mm_or_si128(_mm256_castsi256_si128(any), _mm256_extracti128_si256(any, 1));
    folded = _mm_or_si128(folded, _mm_srli_si128(folded, 8));
    folded = _mm_or_si128(folded, _mm_srli_si128(folded, 4));
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32(folded));
}

void pack_full_block_avx2(const std::uint32_t* z, int width, std::uint8_t* out) {
    const __m128i w = _mm_cvtsi32_si128(width), two_w = _mm_cvtsi32_si128(2 * width);
    const __m256i low_32 = _mm256_set1_epi64x(0xffffffff);
    for (int g = 0; g < kQuantBlock / 8; ++g) {
        const __m256i values = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(z + 8 * g));
        // 64-bit lane i: value 2i, then 2i + 1 from bit W.
        const __m256i pairs =
            _mm256_or_si256(_mm256_and_si256(values, low_32), _mm256_sll_epi64(_mm256_srli_epi64(values, 32), w));
        // Lanes 0 and 2: four values each, the next pair from bit 2W (4W <= 64 bits).
        const __m256i fours = _mm256_or_si256(pairs, _mm256_sll_epi64(_mm256_srli_si256(pairs, 8), two_w));
        const auto first = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm256_castsi256_si128(fours)));
        const auto second = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm256_extracti128_si256(fours, 1)));
        const unsigned __int128 eight = first | static_cast<unsigned __int128>(second) << (4 * width);
        // 16 bytes of which the first W are the group's; the next group's overwrite the rest.
        std::memcpy(out + g * width, &eight, sizeof eight);
    }
}

}  // namespace slabcast::run::detail
