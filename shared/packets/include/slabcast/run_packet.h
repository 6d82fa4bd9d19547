// The "run" wire format: one contiguous run of a slab's values per datagram,
// with its first voxel once instead of coordinates with every value. The
// paper's quad packet (Balman et al., 2012, section 4.2) spends 12 of every 16
// bytes on coordinates; a full run packet carries 2233 values where a quad
// packet carries 560. A receiver tells the two apart by the first word: a quad
// packet's batch is a step number (>= 0), a run packet's magic is negative.
// Byte by byte in docs/wire-format.md.
//
//   int32 magic (bytes "SCR" 0x80); uint8 version (1); uint8 codec (bit 7: the
//   run follows the progressive order); uint16 codec_parameter;
//   int32 step; int32 slab; int32 x, y, z (the first voxel); int32 count (values);
//   uint32 payload_bytes; then the payload: count float32 values (codec none),
//   or the same values encoded so that the packet decodes on its own (lz4, zfp;
//   slabcast/run_codec.h). The codec is named in every packet, so one receiver
//   takes streams with different codecs.
#pragma once

#include "slabcast/quad_packet.h"  // the little-endian guard, the datagram size
#include "slabcast/quant_codec.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace slabcast::run {

constexpr std::int32_t kMagic = static_cast<std::int32_t>(0x80524353u);  // "SCR" 0x80: negative
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 36;
// The same datagram as a full quad packet: fits the 8972-byte UDP payload of a 9000-byte MTU.
constexpr std::size_t kMaxPacketBytes = quad::kMaxPacketBytes;
constexpr int kMaxValues = static_cast<int>((kMaxPacketBytes - kHeaderBytes) / sizeof(float));  // 2233, codec none
static_assert(kMaxValues == 2233);

// The payload's encoding (docs/wire-format.md, "Codecs"); codec_parameter is
// zfp's rate in bits a value, quant's bits of levels (slabcast/quant_codec.h),
// and 0 for the others.
enum class Codec : std::uint8_t { None = 0, Lz4 = 1, Zfp = 2, Quant = 3 };
constexpr Codec kLastCodec = Codec::Quant;
// Bit 7 of the codec byte: the run goes on, past the end of its first voxel's
// row, at the start of the next row in the slab's progressive order
// (slabcast/progressive_rows.h) rather than of the next row in the slab.
constexpr std::uint8_t kProgressiveBit = 0x80;

constexpr std::size_t kMaxPayloadBytes = kMaxPacketBytes - kHeaderBytes;  // 8932
// lz4: values a packet may carry however well they compress (bounds the
// receiver's decode buffer at 32 KiB).
constexpr int kMaxLz4Values = 8192;
// zfp: whole bits a value, 4 to 32 (below 4, a 1-D block of 4 float32 values
// cannot hold its 9-bit exponent and a first bit plane).
constexpr int kMinZfpRate = 4, kMaxZfpRate = 32;

// zfp fixed rate over the run as 1-D blocks of 4 values, 4 * rate bits each,
// rounded up to a whole byte: the only payload size a zfp run of `count`
// values may have. (zfp's bit stream is little-endian and fills each word from
// its lowest bit, so these bytes are the same whatever word size the library
// was built with.) 64-bit arithmetic: any count and rate are safe.
constexpr std::uint64_t zfp_payload_bytes(std::int64_t count, int rate) {
    const std::uint64_t blocks = (static_cast<std::uint64_t>(count) + 3) / 4;
    return (blocks * 4 * static_cast<std::uint64_t>(rate) + 7) / 8;
}

// The most values one packet of `codec` (with `parameter`) carries; 0 for an
// unknown codec or a parameter it does not take.
constexpr int max_values(Codec codec, std::uint16_t parameter) {
    switch (codec) {
    case Codec::None: return parameter == 0 ? static_cast<int>(kMaxPayloadBytes / sizeof(float)) : 0;
    case Codec::Lz4: return parameter == 0 ? kMaxLz4Values : 0;
    case Codec::Zfp:
        if (parameter < kMinZfpRate || parameter > kMaxZfpRate) return 0;
        return static_cast<int>(kMaxPayloadBytes * 8 / (4 * std::uint64_t{parameter}) * 4);  // whole blocks
    case Codec::Quant: return parameter >= kMinQuantBits && parameter <= kMaxQuantBits ? kMaxQuantValues : 0;
    }
    return 0;
}
static_assert(max_values(Codec::Zfp, 8) == 8932 && zfp_payload_bytes(8932, 8) == kMaxPayloadBytes);
static_assert(max_values(Codec::Zfp, 32) == 2232 && zfp_payload_bytes(2233, 32) > kMaxPayloadBytes);

struct Header {
    std::uint8_t version = kVersion;
    Codec codec = Codec::None;
    std::uint16_t codec_parameter = 0;
    std::int32_t step = 0;
    std::int32_t slab = 0;
    std::int32_t x = 0, y = 0, z = 0;  // the run's first voxel
    std::int32_t count = 0;            // values in the run, 1..max_values(codec, codec_parameter)
    std::uint32_t payload_bytes = 0;
    bool progressive = false;  // a range of the progressive order, not of the slab's linear index
};

enum class ParseResult { Ok, TooShort, BadMagic, BadVersion, BadCodec, BadCount, BadLength, BadStep };
// (BadCodec: an unknown codec, or a parameter it does not take.)

const char* to_string(ParseResult r);

// True when the datagram claims to be a run packet (its first word is the
// magic); what else it holds is parse_header's to check.
inline bool is_run_packet(const std::uint8_t* packet, std::size_t length) {
    std::int32_t first = 0;
    if (length < 4) return false;
    std::memcpy(&first, packet, 4);
    return first == kMagic;
}

constexpr std::size_t packet_bytes(int count) { return kHeaderBytes + sizeof(float) * static_cast<std::size_t>(count); }

// Writes the header, h.payload_bytes as given (codec none: 4 * count when
// left 0), and returns where the payload goes.
std::uint8_t* write_header(std::uint8_t* packet, const Header& h);

// Checks the framing: magic, version, a known codec and parameter, 1 <= count
// <= max_values(codec, parameter), a step >= 0, length == 36 + payload_bytes,
// and the payload's size as the codec fixes it: 4 * count (none), exactly
// zfp_payload_bytes (zfp), 1..8932 bytes (lz4, quant; whether it decodes to
// `count` values is the decoder's check). Where the run lies is the receiver's
// business: only it knows which slab the stream may touch.
ParseResult parse_header(const std::uint8_t* packet, std::size_t length, Header& out);

// The payload, payload_bytes from offset 36.
inline const std::uint8_t* payload(const std::uint8_t* packet) { return packet + kHeaderBytes; }

}  // namespace slabcast::run
