#include "slabcast/step_stamp.h"

namespace slabcast::stamp {

const char* to_string(ParseResult r) {
    switch (r) {
    case ParseResult::Ok: return "ok";
    case ParseResult::BadLength: return "a step stamp is 24 bytes";
    case ParseResult::BadMagic: return "not a step stamp (magic)";
    case ParseResult::BadVersion: return "unknown step stamp version";
    case ParseResult::BadReserved: return "flags or reserved bytes not 0";
    case ParseResult::BadStep: return "negative step";
    case ParseResult::BadTime: return "a send time at or before 1970";
    }
    return "unknown";
}

void write(std::uint8_t* packet, const StepStamp& s) {
    const std::uint8_t version = kVersion, flags = 0;
    const std::uint16_t reserved = 0;
    std::memcpy(packet, &kMagic, 4);
    std::memcpy(packet + 4, &version, 1);
    std::memcpy(packet + 5, &flags, 1);
    std::memcpy(packet + 6, &reserved, 2);
    std::memcpy(packet + 8, &s.step, 4);
    std::memcpy(packet + 12, &s.slab, 4);
    std::memcpy(packet + 16, &s.sent_ns, 8);
}

ParseResult parse(const std::uint8_t* packet, std::size_t length, StepStamp& out) {
    if (length != kBytes) return ParseResult::BadLength;
    if (!is_stamp(packet, length)) return ParseResult::BadMagic;
    std::uint8_t version = 0, flags = 0;
    std::uint16_t reserved = 0;
    std::memcpy(&version, packet + 4, 1);
    std::memcpy(&flags, packet + 5, 1);
    std::memcpy(&reserved, packet + 6, 2);
    std::memcpy(&out.step, packet + 8, 4);
    std::memcpy(&out.slab, packet + 12, 4);
    std::memcpy(&out.sent_ns, packet + 16, 8);
    if (version != kVersion) return ParseResult::BadVersion;
    if (flags != 0 || reserved != 0) return ParseResult::BadReserved;
    if (out.step < 0) return ParseResult::BadStep;
    if (out.sent_ns <= 0) return ParseResult::BadTime;
    return ParseResult::Ok;
}

}  // namespace slabcast::stamp
