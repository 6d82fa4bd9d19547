// The "quad" wire format of the SC11 demo (Balman et al., 2012, section 4.2), byte for byte:
//   int32 batch; int32 n; then n records { int32 x, y, z; float32 v }, little-endian.
// 1 <= n <= 560, so a full packet is 8 + 560*16 = 8968 bytes, the largest that
// fits a 9000-byte MTU (8972 bytes of UDP payload). See docs/wire-format.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "slabcast assumes a little-endian host: wire and shared-memory formats are little-endian"
#endif

namespace slabcast::quad {

constexpr std::size_t kHeaderBytes = 8;
constexpr std::size_t kRecordBytes = 16;
constexpr int kMaxRecords = 560;
constexpr std::size_t kMaxPacketBytes = kHeaderBytes + kRecordBytes * kMaxRecords;  // 8968
static_assert(kMaxPacketBytes == 8968);

struct Record {
    std::int32_t x, y, z;
    float v;
};
static_assert(sizeof(Record) == kRecordBytes, "Record must match the wire layout");

struct Header {
    std::int32_t batch;  // the timestep number
    std::int32_t n;      // records that follow
};

enum class ParseResult { Ok, TooShort, BadLength, BadCount };

const char* to_string(ParseResult r);

constexpr std::size_t packet_bytes(int n) { return kHeaderBytes + kRecordBytes * static_cast<std::size_t>(n); }
// The most records a packet of at most `bytes` holds (up to kMaxRecords).
constexpr int records_within(std::size_t bytes) {
    return bytes < packet_bytes(1) ? 0 : static_cast<int>(std::min<std::size_t>(kMaxRecords, (bytes - kHeaderBytes) / kRecordBytes));
}
static_assert(records_within(kMaxPacketBytes) == kMaxRecords && records_within(8952) == 559 && records_within(7) == 0);

inline void write_header(std::uint8_t* packet, std::int32_t batch, std::int32_t n) {
    std::memcpy(packet, &batch, 4);
    std::memcpy(packet + 4, &n, 4);
}

inline void write_record(std::uint8_t* packet, int i, const Record& r) {
    std::memcpy(packet + kHeaderBytes + kRecordBytes * static_cast<std::size_t>(i), &r, kRecordBytes);
}

inline Record read_record(const std::uint8_t* packet, int i) {
    Record r;
    std::memcpy(&r, packet + kHeaderBytes + kRecordBytes * static_cast<std::size_t>(i), kRecordBytes);
    return r;
}

// Checks the framing only (length = 8 + 16n, 1 <= n <= 560); coordinates are the
// receiver's business because only it knows which slab the stream may touch.
ParseResult parse_header(const std::uint8_t* packet, std::size_t length, Header& out);

}  // namespace slabcast::quad
