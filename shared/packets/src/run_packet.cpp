#include "slabcast/run_packet.h"

namespace slabcast::run {

const char* to_string(ParseResult r) {
    switch (r) {
    case ParseResult::Ok: return "ok";
    case ParseResult::TooShort: return "shorter than the 36-byte header";
    case ParseResult::BadMagic: return "not a run packet (magic)";
    case ParseResult::BadVersion: return "unknown run packet version";
    case ParseResult::BadCodec: return "unknown codec, or a parameter the codec does not take";
    case ParseResult::BadCount: return "value count outside 1..the codec's most a packet";
    case ParseResult::BadLength: return "length is not 36 + payload bytes, or the payload's size is not the codec's";
    case ParseResult::BadStep: return "negative step";
    }
    return "unknown";
}

std::uint8_t* write_header(std::uint8_t* packet, const Header& h) {
    const std::uint32_t payload = h.payload_bytes != 0 ? h.payload_bytes
                                                       : static_cast<std::uint32_t>(sizeof(float)) *
                                                             static_cast<std::uint32_t>(h.count);
    const auto codec = static_cast<std::uint8_t>(static_cast<std::uint8_t>(h.codec) | (h.progressive ? kProgressiveBit : 0));
    std::memcpy(packet, &kMagic, 4);
    std::memcpy(packet + 4, &h.version, 1);
    std::memcpy(packet + 5, &codec, 1);
    std::memcpy(packet + 6, &h.codec_parameter, 2);
    std::memcpy(packet + 8, &h.step, 4);
    std::memcpy(packet + 12, &h.slab, 4);
    std::memcpy(packet + 16, &h.x, 4);
    std::memcpy(packet + 20, &h.y, 4);
    std::memcpy(packet + 24, &h.z, 4);
    std::memcpy(packet + 28, &h.count, 4);
    std::memcpy(packet + 32, &payload, 4);
    return packet + kHeaderBytes;
}

ParseResult parse_header(const std::uint8_t* packet, std::size_t length, Header& out) {
    if (length < kHeaderBytes) return ParseResult::TooShort;
    if (!is_run_packet(packet, length)) return ParseResult::BadMagic;
    std::uint8_t codec = 0;
    std::memcpy(&out.version, packet + 4, 1);
    std::memcpy(&codec, packet + 5, 1);
    std::memcpy(&out.codec_parameter, packet + 6, 2);
    std::memcpy(&out.step, packet + 8, 4);
    std::memcpy(&out.slab, packet + 12, 4);
    std::memcpy(&out.x, packet + 16, 4);
    std::memcpy(&out.y, packet + 20, 4);
    std::memcpy(&out.z, packet + 24, 4);
    std::memcpy(&out.count, packet + 28, 4);
    std::memcpy(&out.payload_bytes, packet + 32, 4);
    if (out.version != kVersion) return ParseResult::BadVersion;
    out.progressive = (codec & kProgressiveBit) != 0;
    codec &= static_cast<std::uint8_t>(~kProgressiveBit);
    out.codec = static_cast<Codec>(codec);
    const int most = codec <= static_cast<std::uint8_t>(kLastCodec) ? max_values(out.codec, out.codec_parameter) : 0;
    if (most == 0) return ParseResult::BadCodec;
    if (out.count < 1 || out.count > most) return ParseResult::BadCount;
    // 64-bit sums: a hostile payload_bytes cannot wrap the comparison.
    const std::uint64_t payload = out.payload_bytes;
    if (std::uint64_t{length} != kHeaderBytes + payload) return ParseResult::BadLength;
    bool size_ok = false;
    switch (out.codec) {
    case Codec::None: size_ok = payload == sizeof(float) * static_cast<std::uint64_t>(out.count); break;
    case Codec::Lz4:
    case Codec::Quant: size_ok = payload >= 1 && payload <= kMaxPayloadBytes; break;
    case Codec::Zfp: size_ok = payload == zfp_payload_bytes(out.count, out.codec_parameter); break;
    }
    if (!size_ok) return ParseResult::BadLength;
    if (out.step < 0) return ParseResult::BadStep;
    return ParseResult::Ok;
}

}  // namespace slabcast::run
