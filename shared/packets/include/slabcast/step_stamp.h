// The step stamp: a 24-byte datagram a sender puts on a stream as a step's
// first data packet leaves, twice (before the step's first batch and after
// it, so that one loss does not lose it), saying when that was. The receiver
// publishes it beside the step (docs/shared-memory.md, "Times"), so a reader
// can tell how long a step took from the sender to the screen. The paper
// measured that end to end: about 1.4 s to move a 16 GB step and 2.5 s more
// to draw it (Balman et al., 2012, section 4). Byte by byte in
// docs/wire-format.md.
//
//   int32 magic (bytes "SCT" 0x80: negative, unlike a quad packet's step);
//   uint8 version (1); uint8 flags (0); uint16 reserved (0);
//   int32 step; int32 slab; int64 sent_ns (the sender's CLOCK_REALTIME).
//
// The time is the sender's clock: on another host it differs from the
// receiver's by however far the two clocks are apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace slabcast::stamp {

constexpr std::int32_t kMagic = static_cast<std::int32_t>(0x80544353u);  // "SCT" 0x80
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kBytes = 24;

struct StepStamp {
    std::int32_t step = 0;
    std::int32_t slab = 0;
    std::int64_t sent_ns = 0;  // > 0
};

enum class ParseResult { Ok, BadLength, BadMagic, BadVersion, BadReserved, BadStep, BadTime };
const char* to_string(ParseResult r);

// True when the datagram claims to be a stamp (its first word is the magic).
inline bool is_stamp(const std::uint8_t* packet, std::size_t length) {
    std::int32_t first = 0;
    if (length < 4) return false;
    std::memcpy(&first, packet, 4);
    return first == kMagic;
}

// Writes the 24 bytes.
void write(std::uint8_t* packet, const StepStamp& s);
// Checks everything: exactly 24 bytes, magic, version, flags and reserved 0,
// a step >= 0 and a time > 0. The slab is the receiver's to compare.
ParseResult parse(const std::uint8_t* packet, std::size_t length, StepStamp& out);

}  // namespace slabcast::stamp
