#include "slabcast/control_packets.h"

#include <sodium.h>

#include <cstring>

namespace slabcast::control {
namespace {

// Sync: magic u32 | version u16 | flags u16 | session u64 | seq u32 | step i32 |
//       location_length u16 | reserved u16 | location bytes      (28 + L bytes)
constexpr std::size_t kSyncFixed = 28;
// Authenticated (flags bit 0): then time_ns i64 | HMAC-SHA-256 tag [32]   (28 + L + 40 bytes)
constexpr std::uint16_t kFlagAuthenticated = 1;
constexpr std::size_t kAuthBytes = 8 + crypto_auth_hmacsha256_BYTES;
// Reply: magic u32 | version u16 | kind u16 | session u64 | seq u32 | step i32 |
//        stream i32 | reserved u32 | packets_sent u64 | packets_total u64 (48 bytes)
constexpr std::size_t kReplyBytes = 48;

template <typename T>
void put(std::vector<std::uint8_t>& out, std::size_t at, T v) {
    std::memcpy(out.data() + at, &v, sizeof v);
}
template <typename T>
T get(const std::uint8_t* data, std::size_t at) {
    T v;
    std::memcpy(&v, data + at, sizeof v);
    return v;
}

}  // namespace

const char* to_string(ReplyKind k) {
    switch (k) {
    case ReplyKind::Started: return "started";
    case ReplyKind::Finished: return "finished";
    case ReplyKind::Abandoned: return "abandoned";
    case ReplyKind::Missing: return "missing";
    }
    return "unknown";
}

bool location_is_safe(const std::string& location) {
    if (location.empty() || location.size() > kMaxLocationBytes) return false;
    if (location == "." || location == ".." || location.rfind("..", 0) == 0) return false;
    for (unsigned char c : location)
        if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return false;
    return true;
}

std::vector<std::uint8_t> encode(const Sync& s, const SyncKey* key) {
    const std::size_t body = kSyncFixed + s.location.size();
    std::vector<std::uint8_t> out(body + (key ? kAuthBytes : 0));
    put(out, 0, kSyncMagic);
    put(out, 4, kVersion);
    put<std::uint16_t>(out, 6, key ? kFlagAuthenticated : 0);
    put(out, 8, s.session);
    put(out, 16, s.seq);
    put(out, 20, s.step);
    put(out, 24, static_cast<std::uint16_t>(s.location.size()));
    put<std::uint16_t>(out, 26, 0);
    std::memcpy(out.data() + kSyncFixed, s.location.data(), s.location.size());
    if (key) {
        put(out, body, s.time_ns);
        crypto_auth_hmacsha256(out.data() + body + 8, out.data(), body + 8, key->bytes.data());
    }
    return out;
}

std::optional<Sync> decode_sync(const std::uint8_t* data, std::size_t length, const SyncKey* key) {
    if (length < kSyncFixed) return std::nullopt;
    if (get<std::uint32_t>(data, 0) != kSyncMagic || get<std::uint16_t>(data, 4) != kVersion) return std::nullopt;
    const auto flags = get<std::uint16_t>(data, 6);
    if (flags & ~kFlagAuthenticated) return std::nullopt;
    const bool tagged = flags & kFlagAuthenticated;
    const auto location_length = get<std::uint16_t>(data, 24);
    const std::size_t body = kSyncFixed + location_length;
    if (length != body + (tagged ? kAuthBytes : 0)) return std::nullopt;
    Sync s;
    s.session = get<std::uint64_t>(data, 8);
    s.seq = get<std::uint32_t>(data, 16);
    s.step = get<std::int32_t>(data, 20);
    s.location.assign(reinterpret_cast<const char*>(data + kSyncFixed), location_length);
    if (!location_is_safe(s.location)) return std::nullopt;
    if (tagged) {
        s.signed_ = true;
        s.time_ns = get<std::int64_t>(data, body);
        s.verified = key && crypto_auth_hmacsha256_verify(data + body + 8, data, body + 8, key->bytes.data()) == 0;
    }
    return s;
}

std::vector<std::uint8_t> encode(const Reply& r) {
    std::vector<std::uint8_t> out(kReplyBytes);
    put(out, 0, kReplyMagic);
    put(out, 4, kVersion);
    put(out, 6, static_cast<std::uint16_t>(r.kind));
    put(out, 8, r.session);
    put(out, 16, r.seq);
    put(out, 20, r.step);
    put(out, 24, r.stream);
    put<std::uint32_t>(out, 28, 0);
    put(out, 32, r.packets_sent);
    put(out, 40, r.packets_total);
    return out;
}

std::optional<Reply> decode_reply(const std::uint8_t* data, std::size_t length) {
    if (length != kReplyBytes) return std::nullopt;
    if (get<std::uint32_t>(data, 0) != kReplyMagic || get<std::uint16_t>(data, 4) != kVersion) return std::nullopt;
    const auto kind = get<std::uint16_t>(data, 6);
    if (kind < 1 || kind > 4) return std::nullopt;
    Reply r;
    r.kind = static_cast<ReplyKind>(kind);
    r.session = get<std::uint64_t>(data, 8);
    r.seq = get<std::uint32_t>(data, 16);
    r.step = get<std::int32_t>(data, 20);
    r.stream = get<std::int32_t>(data, 24);
    r.packets_sent = get<std::uint64_t>(data, 32);
    r.packets_total = get<std::uint64_t>(data, 40);
    return r;
}

bool supersedes(const Sync& incoming, const std::optional<Sync>& current) {
    if (!current) return true;
    if (incoming.session != current->session) return true;
    return incoming.seq > current->seq;
}

}  // namespace slabcast::control
