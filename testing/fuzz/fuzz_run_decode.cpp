// libFuzzer harness: run packets' decoders (docs/wire-format.md, "Codecs"),
// what a receiver does with any datagram that carries the run magic before a
// single value reaches a slab; and the encoders on the input's bytes as values.
// ASan catches a decoder that reads or writes past its buffers; the checks
// below catch a decoder that accepts what it should refuse, an encoder whose
// packet does not come back, or the quant codec's portable loops and AVX2
// kernels (where the CPU has them) disagreeing on a byte, a verdict or a value.
#include "slabcast/run_codec.h"

#include <cmath>
#include <cstring>
#include <vector>

using namespace slabcast;

namespace {

// The quant codec's kernels for the calls that follow: the portable loops
// (reported in use, so that the comparisons below cannot hold the AVX2
// kernels to themselves), or the best the CPU has.
void portable_loops() {
    if (run::allow_quant_kernels(run::QuantKernels::Portable) != run::QuantKernels::Portable) __builtin_trap();
}
void best_kernels() { run::allow_quant_kernels(run::QuantKernels::Avx2); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static run::RunDecoder decoder, portable_decoder;

    // 1. The input as a datagram: parse, decode with the portable loops and
    // with the best kernels, read every value decoded (ASan: a short buffer
    // faults here); both accept or refuse it, and give the same values.
    run::Header h;
    if (run::parse_header(data, size, h) == run::ParseResult::Ok) {
        if (h.count < 1 || h.count > run::max_values(h.codec, h.codec_parameter)) __builtin_trap();
        portable_loops();
        const float* portable = portable_decoder.decode(h, run::payload(data));
        best_kernels();
        if (const float* v = decoder.decode(h, run::payload(data))) {
            if (!portable || std::memcmp(v, portable, sizeof(float) * static_cast<std::size_t>(h.count)) != 0)
                __builtin_trap();
            volatile float last = 0;
            for (int i = 0; i < h.count; ++i) last = v[i];
        } else if (portable) {
            __builtin_trap();
        }
    }

    // 2. The input's bytes as float32 values through each encoder: every
    // packet parses, fits a datagram, is the same bytes from the portable
    // loops and the best kernels, lz4 and none come back exact, and quant
    // within its bound.
    if (size < 5) return 0;
    std::vector<float> values((size - 1) / sizeof(float));
    std::memcpy(values.data(), data + 1, values.size() * sizeof(float));
    const int rate = run::kMinZfpRate + data[0] % (run::kMaxZfpRate - run::kMinZfpRate + 1);
    const int bits = run::kMinQuantBits + data[0] % (run::kMaxQuantBits - run::kMinQuantBits + 1);
    for (const run::CodecChoice choice :
         {run::CodecChoice{run::Codec::None, 0}, run::CodecChoice{run::Codec::Lz4, 0},
          run::CodecChoice{run::Codec::Zfp, static_cast<std::uint16_t>(rate)},
          run::CodecChoice{run::Codec::Quant, static_cast<std::uint16_t>(bits)}}) {
        run::RunEncoder encoder(choice), portable_encoder(choice);
        std::vector<std::uint8_t> packet(run::kMaxPacketBytes), portable_packet(run::kMaxPacketBytes);
        std::size_t done = 0;
        while (done < values.size()) {
            run::Header where;
            const auto left = static_cast<std::int64_t>(values.size() - done);
            portable_loops();
            const run::RunEncoder::Packet portable =
                portable_encoder.encode(values.data() + done, left, where, portable_packet.data());
            best_kernels();
            const run::RunEncoder::Packet p = encoder.encode(values.data() + done, left, where, packet.data());
            if (p.count < 1 || p.bytes > run::kMaxPacketBytes) __builtin_trap();
            if (portable.count != p.count || portable.bytes != p.bytes ||
                std::memcmp(portable_packet.data(), packet.data(), p.bytes) != 0)
                __builtin_trap();
            run::Header got;
            if (run::parse_header(packet.data(), p.bytes, got) != run::ParseResult::Ok || got.count != p.count)
                __builtin_trap();
            const float* back = decoder.decode(got, run::payload(packet.data()));
            if (!back) __builtin_trap();
            if ((got.codec == run::Codec::None || got.codec == run::Codec::Lz4) &&
                std::memcmp(back, values.data() + done, sizeof(float) * static_cast<std::size_t>(p.count)) != 0)
                __builtin_trap();
            if (got.codec == run::Codec::Quant) {
                // Within its stated bound: half a level, plus float32's half ulp of the result.
                float q = 0;
                std::memcpy(&q, run::payload(packet.data()) + 4, 4);
                for (int i = 0; i < p.count; ++i) {
                    const float x = values[done + static_cast<std::size_t>(i)], y = back[i];
                    const double ulp = std::nextafter(std::fabs(y), HUGE_VALF) - std::fabs(y);
                    if (!(std::fabs(static_cast<double>(y) - x) <= 0.5 * q + 0.5 * ulp)) __builtin_trap();
                }
            }
            done += static_cast<std::size_t>(p.count);
        }
    }
    return 0;
}
