// The quant decoder's kernel for AVX2 and FMA (quant_codec_avx2.cpp, the
// only file built for them): called only where the CPU has both, so the
// library still runs on any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slabcast::run::detail {

bool have_avx2_fma();

// Bytes the kernel may read after a block's own (and then ignores): the
// caller copies a block with fewer than these after it into a padded buffer.
constexpr std::size_t kQuantReadPast = 16;

// A full block (32 values) from its bit-packed zigzagged level differences
// at `width` bits (0..17), `level` the level before it and then the block's
// last; false when a level lies outside 0..`levels`. Each value is
// fma(level, q, lo) rounded once, as the portable loop computes it.
using FullBlockDecoder = bool (*)(const std::uint8_t* packed, float lo, float q, std::uint32_t levels,
                                  std::int32_t& level, float* values);
FullBlockDecoder full_block_decoder_avx2(int width);

}  // namespace slabcast::run::detail
