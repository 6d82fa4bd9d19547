// The "run" wire format: one contiguous run of a slab's values per datagram,
// with its first voxel once instead of coordinates with every value. The
// paper's quad packet (Balman et al., 2012, section 4.2) spends 12 of every 16
// bytes on coordinates; a full run packet carries 2233 values where a quad
// packet carries 560. A receiver tells the two apart by the first word: a quad
// packet's batch is a step number (>= 0), a run packet's magic is negative.
// Byte by byte in docs/wire-format.md.
//
//   int32 magic (bytes "SCR" 0x80); uint8 version (1); uint8 codec; uint16 codec_parameter;
//   int32 step; int32 slab; int32 x, y, z (the first voxel); int32 count (values);
//   uint32 payload_bytes; then the payload (codec none: count float32 values).
#pragma once

#include "slabcast/quad_packet.h"  // the little-endian guard, the datagram size

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace slabcast::run {

constexpr std::int32_t kMagic = static_cast<std::int32_t>(0x80524353u);  // "SCR" 0x80: negative
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 36;
// The same datagram as a full quad packet: fits the 8972-byte UDP payload of a 9000-byte MTU.
constexpr std::size_t kMaxPacketBytes = quad::kMaxPacketBytes;
constexpr int kMaxValues = static_cast<int>((kMaxPacketBytes - kHeaderBytes) / sizeof(float));  // 2233
static_assert(kMaxValues == 2233);

enum class Codec : std::uint8_t { None = 0 };

struct Header {
    std::uint8_t version = kVersion;
    Codec codec = Codec::None;
    std::uint16_t codec_parameter = 0;
    std::int32_t step = 0;
    std::int32_t slab = 0;
    std::int32_t x = 0, y = 0, z = 0;  // the run's first voxel
    std::int32_t count = 0;            // values in the run, 1..kMaxValues
    std::uint32_t payload_bytes = 0;
};

enum class ParseResult { Ok, TooShort, BadMagic, BadVersion, BadCodec, BadCount, BadLength, BadStep };

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

// Writes the header (codec none: payload_bytes = 4 * count) and returns where
// the payload goes.
std::uint8_t* write_header(std::uint8_t* packet, const Header& h);

// Checks the framing: magic, version, codec, 1 <= count <= 2233, a step >= 0,
// and length == 36 + payload_bytes with payload_bytes == 4 * count for codec
// none. Where the run lies is the receiver's business: only it knows which
// slab the stream may touch.
ParseResult parse_header(const std::uint8_t* packet, std::size_t length, Header& out);

// The run's values (codec none), `count` float32 from offset 36.
inline const std::uint8_t* payload(const std::uint8_t* packet) { return packet + kHeaderBytes; }

}  // namespace slabcast::run
