#include "slabcast/quad_packet.h"

namespace slabcast::quad {

const char* to_string(ParseResult r) {
    switch (r) {
    case ParseResult::Ok: return "ok";
    case ParseResult::TooShort: return "shorter than the 8-byte header";
    case ParseResult::BadLength: return "length is not 8 + 16n";
    case ParseResult::BadCount: return "record count n outside 1..560";
    }
    return "unknown";
}

ParseResult parse_header(const std::uint8_t* packet, std::size_t length, Header& out) {
    if (length < kHeaderBytes) return ParseResult::TooShort;
    std::memcpy(&out.batch, packet, 4);
    std::memcpy(&out.n, packet + 4, 4);
    if (out.n < 1 || out.n > kMaxRecords) return ParseResult::BadCount;
    if (length != packet_bytes(out.n)) return ParseResult::BadLength;
    return ParseResult::Ok;
}

}  // namespace slabcast::quad
