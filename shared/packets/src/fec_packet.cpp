#include "slabcast/fec_packet.h"

#include "slabcast/erasure_code.h"
#include "slabcast/run_packet.h"
#include "slabcast/step_stamp.h"

namespace slabcast::fec {

const char* to_string(ParseResult r) {
    switch (r) {
    case ParseResult::Ok: return "ok";
    case ParseResult::TooShort: return "no bytes after the FEC header";
    case ParseResult::TooLong: return "a datagram after an FEC header longer than 8952 bytes";
    case ParseResult::BadMagic: return "not an FEC datagram (magic)";
    case ParseResult::BadVersion: return "unknown FEC version";
    case ParseResult::BadReserved: return "reserved bytes not 0";
    case ParseResult::BadCode: return "a parity packet's k+m is not a code (1..240 + 1..64, 255 in all)";
    case ParseResult::BadIndex: return "an index past its code (data below 240, parity below m)";
    case ParseResult::BadCount: return "a parity packet's count of data datagrams not in 1..k";
    }
    return "unknown";
}

void write_header(std::uint8_t* datagram, const Header& h) {
    std::memcpy(datagram, h.parity ? &kParityMagic : &kDataMagic, 4);
    datagram[4] = kVersion;
    datagram[5] = h.index;
    datagram[6] = h.parity ? h.k : 0;
    datagram[7] = h.parity ? h.m : 0;
    std::memcpy(datagram + 8, &h.group, 4);
    datagram[12] = h.parity ? h.count : 0;
    datagram[13] = datagram[14] = datagram[15] = 0;
}

ParseResult parse_header(const std::uint8_t* datagram, std::size_t length, Header& out) {
    if (!is_fec(datagram, length)) return ParseResult::BadMagic;
    std::int32_t magic = 0;
    std::memcpy(&magic, datagram, 4);
    out.parity = magic == kParityMagic;
    const std::size_t header = header_bytes(out.parity);
    if (length <= header) return ParseResult::TooShort;
    if (length - header > kMaxShardBytes) return ParseResult::TooLong;
    if (datagram[4] != kVersion) return ParseResult::BadVersion;
    out.index = datagram[5];
    std::memcpy(&out.group, datagram + 8, 4);
    if (!out.parity) {
        out.k = out.m = out.count = 0;
        if (datagram[6] != 0 || datagram[7] != 0 || datagram[12] != 0 || datagram[13] != 0 || datagram[14] != 0 ||
            datagram[15] != 0)
            return ParseResult::BadReserved;
        return out.index < kMaxDataShards ? ParseResult::Ok : ParseResult::BadIndex;
    }
    out.k = datagram[6];
    out.m = datagram[7];
    out.count = datagram[12];
    if (datagram[13] != 0 || datagram[14] != 0 || datagram[15] != 0) return ParseResult::BadReserved;
    if (!valid_code(out.k, out.m)) return ParseResult::BadCode;
    if (out.index >= out.m) return ParseResult::BadIndex;
    if (out.count < 1 || out.count > out.k) return ParseResult::BadCount;
    return ParseResult::Ok;
}

std::size_t inner_length(const std::uint8_t* shard, std::size_t shard_bytes) {
    if (shard_bytes < 8) return 0;
    std::int32_t first = 0;
    std::memcpy(&first, shard, 4);
    std::uint64_t length = 0;  // 64-bit: a hostile count cannot wrap it
    if (first == run::kMagic) {
        if (shard_bytes < run::kHeaderBytes) return 0;
        std::uint32_t payload = 0;
        std::memcpy(&payload, shard + 32, 4);
        length = run::kHeaderBytes + std::uint64_t{payload};
    } else if (first == stamp::kMagic) {
        length = stamp::kBytes;
    } else if (first >= 0) {  // a quad packet's batch: a step number
        std::int32_t n = 0;
        std::memcpy(&n, shard + 4, 4);
        if (n < 1 || n > quad::kMaxRecords) return 0;
        length = quad::packet_bytes(n);
    }
    return length > 0 && length <= shard_bytes ? static_cast<std::size_t>(length) : 0;
}

}  // namespace slabcast::fec
