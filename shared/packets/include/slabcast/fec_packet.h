// Forward error correction on the wire: a stream's datagrams in groups of k,
// each group followed by m parity datagrams (slabcast/erasure_code.h), so that
// a receiver rebuilds up to m lost datagrams of a group without a round trip.
// The paper streamed over UDP and accepted the loss it met, about 5% of the
// packets in the high-bandwidth demo (Balman et al., 2012, section 4).
// Byte by byte in docs/wire-format.md, "FEC shim and parity packet".
//
// With FEC on, each data datagram (a quad packet, run packet or step stamp)
// goes out behind a 16-byte shim naming its group and place in it:
//
//   int32 magic (bytes "SCE" 0x80); uint8 version (1); uint8 index (0..k-1);
//   uint16 reserved (0); uint32 group; uint32 reserved (0);
//
// and each parity datagram is a 16-byte header and the parity shard:
//
//   int32 magic (bytes "SCP" 0x80); uint8 version (1); uint8 index (0..m-1);
//   uint8 k; uint8 m; uint32 group; uint8 count (1..k); uint8 reserved[3] (0);
//   then the shard.
//
// A group's shards are its data datagrams (without the shim), each padded with
// zeros to the longest; the parity shard has that length. k and m are the
// stream's code; count is the data datagrams the group has: a group closed
// at a step's end has fewer than k, and the shards count..k-1 are all zeros,
// known to both ends and never sent. A rebuilt datagram's length is read from
// its own header (inner_length): every data datagram says how long it is.
#pragma once

#include "slabcast/quad_packet.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace slabcast::fec {

constexpr std::int32_t kDataMagic = static_cast<std::int32_t>(0x80454353u);    // "SCE" 0x80
constexpr std::int32_t kParityMagic = static_cast<std::int32_t>(0x80504353u);  // "SCP" 0x80
constexpr std::uint8_t kVersion = 1;
// Both headers are 16 bytes, so that a full group's data and parity
// datagrams are one size and UDP GSO sends them together. The datagrams stay
// within what they are without FEC (a 9000-byte MTU's 8972-byte UDP
// payload): the packet inside gives up 16 bytes.
constexpr std::size_t kDataHeaderBytes = 16, kParityHeaderBytes = 16;
constexpr std::size_t kMaxDatagramBytes = quad::kMaxPacketBytes;                // 8968
constexpr std::size_t kMaxShardBytes = kMaxDatagramBytes - kParityHeaderBytes;  // 8952

struct Header {
    bool parity = false;
    std::uint8_t index = 0;  // data: 0..k-1; parity: 0..m-1
    // Parity only (0 in a data shim's reading): the stream's code, and the
    // data datagrams in this group.
    std::uint8_t k = 0, m = 0, count = 0;
    std::uint32_t group = 0;
};

constexpr std::size_t header_bytes(bool parity) { return parity ? kParityHeaderBytes : kDataHeaderBytes; }

enum class ParseResult { Ok, TooShort, TooLong, BadMagic, BadVersion, BadReserved, BadCode, BadIndex, BadCount };
const char* to_string(ParseResult r);

// True when the datagram claims to be a data shim or a parity packet.
inline bool is_fec(const std::uint8_t* datagram, std::size_t length) {
    std::int32_t first = 0;
    if (length < 4) return false;
    std::memcpy(&first, datagram, 4);
    return first == kDataMagic || first == kParityMagic;
}

// Writes header_bytes(h.parity) bytes (a data shim's k, m and count are not written).
void write_header(std::uint8_t* datagram, const Header& h);

// Checks the header and the datagram's length: a known magic and version,
// reserved bytes 0, 1..kMaxShardBytes bytes after the header; data: index
// below 240 (below its group's count is the group's to check); parity:
// valid_code(k, m), index < m, 1 <= count <= k.
ParseResult parse_header(const std::uint8_t* datagram, std::size_t length, Header& out);

// The length of the data datagram at the start of a rebuilt shard of
// `shard_bytes` (the zeros after it are padding), from its own header: a run
// packet's 36 + payload_bytes, a quad packet's 8 + 16 n, a step stamp's 24.
// 0 when the shard holds none of them or the length runs past the shard.
std::size_t inner_length(const std::uint8_t* shard, std::size_t shard_bytes);

}  // namespace slabcast::fec
