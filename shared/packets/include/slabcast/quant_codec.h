// The quant codec of run packets (docs/wire-format.md, "Codecs"): lossy, fast
// enough to keep up with the wire on one core, every packet decoding on its
// own. Each value becomes one of 2^BITS levels evenly spread over its
// packet's range, [lo, lo + q * (2^BITS - 1)]; the levels go out as
// differences from the value before (a smooth field differs little from one
// voxel to the next), zigzagged to unsigned, in blocks of 32 bit-packed at
// the width the block's largest needs. Where zfp spends the same bits on
// every value, a smooth stretch of the run costs a few bits a value here.
//
// Error bound: every decoded value, fma(level, q, lo) rounded once, is
// within q / 2 of the original, plus float32's rounding of it (half an
// ulp); q is at most (packet max - packet min) / (2^BITS - 1), so over a
// step's range R the error is at most R / (2^(BITS+1) - 2) and the PSNR at
// least about 6.02 * BITS + 10.8 dB. A run holding a NaN or an infinity
// has no range: it is not quant-coded (the encoder sends it raw).
//
//   payload: float32 lo; float32 q; then per block of 32 values (the last
//   may be short): uint8 width (0..BITS+1), then ceil(n * width / 8) bytes:
//   value i's zigzagged difference in bits [i * width, (i + 1) * width),
//   least significant bit first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slabcast::run {

constexpr int kMinQuantBits = 4, kMaxQuantBits = 16;
// Values a quant packet carries at most, however well they code: bounds the
// receiver's decode buffer (64 KiB).
constexpr int kMaxQuantValues = 16384;
constexpr std::size_t kQuantHeaderBytes = 8;
constexpr int kQuantBlock = 32;

struct QuantPacket {
    int count = 0;          // values coded, from the front; 0: not coded (a value not finite)
    std::size_t bytes = 0;  // payload bytes written
};
// Codes as many of values[0..available) (at most kMaxQuantValues) as fit in
// `capacity` bytes of `out`, BITS levels over their range; whole blocks of 32
// except at the end of `available`.
QuantPacket quant_encode(const float* values, std::int64_t available, int bits, std::uint8_t* out,
                         std::size_t capacity);
// Decodes `count` values of a payload of `bytes` bytes into `values`; false
// unless the payload is exactly that many values at widths <= BITS + 1, and
// nothing after them.
bool quant_decode(const std::uint8_t* payload, std::size_t bytes, int count, int bits, float* values);

// The block kernels both run on full blocks: AVX2 and FMA where the CPU has
// them (slabcast/cpu_features.h), the portable loops elsewhere. They give the
// same bytes and values bit for bit; the unit tests and fuzz_run_decode hold
// one to the other by running each.
enum class QuantKernels { Portable, Avx2 };
// Every call from now on, in every thread, runs `most` where the CPU has it,
// else the portable loops: Avx2 (the default) is the best available. For
// tests and fuzzers; the data path never calls it. Returns quant_kernels().
QuantKernels allow_quant_kernels(QuantKernels most);
// The kernels the next call runs.
QuantKernels quant_kernels();

}  // namespace slabcast::run
