// The quant codec's block kernels for AVX2 and FMA (quant_codec_avx2.cpp,
// the only file built for them): called only where the CPU has both
// (slabcast/cpu_features.h), so the library still runs on any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slabcast::run::detail {

// Bytes the kernel may read after a block's own (and then ignores): the
// caller copies a block with fewer than these after it into a padded buffer.
constexpr std::size_t kQuantReadPast = 16;

// A full block (32 values) from its bit-packed zigzagged level differences
// at `width` bits (0..17), `level` the level before it and then the block's
// last; false when a level lies outside 0..`levels`. Each value is
// fma(level, q, lo) rounded once, as the portable loop computes it.
bool decode_full_block_avx2(const std::uint8_t* packed, int width, float lo, float q, std::uint32_t levels,
                            std::int32_t& level, float* values);

// A full block's zigzagged level differences (32) into `z`, each value's
// level computed as the portable loop does it (in doubles, bit for bit),
// `previous` the level before the block and then its last; returns their OR.
std::uint32_t full_block_differences_avx2(const float* values, float lo, double inverse, std::int32_t levels,
                                          std::int32_t& previous, std::uint32_t* z);

// Widths the packer below takes, and bytes it may write after a block's own
// (zeros; the caller packs a block with less room after it elsewhere).
constexpr int kQuantVectorPackWidth = 16;
constexpr std::size_t kQuantWritePast = 16;

// A full block's zigzagged differences (32, each under 2^width, width at
// most kQuantVectorPackWidth) packed into 4 * width bytes at `out`, as the
// format lays them, whatever the width: no branch on it.
void pack_full_block_avx2(const std::uint32_t* z, int width, std::uint8_t* out);

}  // namespace slabcast::run::detail
