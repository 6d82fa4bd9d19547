// Control-plane packets (our own, versioned; see docs/wire-format.md):
//  - Sync, controller -> shufflers and stager: "send step S, staged as file F".
//  - Reply, shuffler -> controller: "started / finished / abandoned / missing step S".
// Both little-endian, fixed header then a variable tail, well under one MTU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slabcast::control {

constexpr std::uint32_t kSyncMagic = 0x59534353;   // "SCSY" on the wire
constexpr std::uint32_t kReplyMagic = 0x50525343;  // "SCRP" on the wire
constexpr std::uint16_t kVersion = 1;
constexpr std::size_t kMaxLocationBytes = 1024;

// A shared secret for HMAC-SHA-256 of sync packets (see key_file.h).
struct SyncKey {
    std::array<std::uint8_t, 32> bytes{};
};

struct Sync {
    std::uint64_t session = 0;  // random per controller run; a new session resets ordering
    std::uint32_t seq = 0;      // increases with every new step order within a session
    std::int32_t step = 0;      // step number (the batch of its quad packets)
    std::string location;       // staged file, relative to the staging directory
    // Authenticated syncs only (flags bit 0): the controller's CLOCK_REALTIME
    // when it made the sync, and whether the tag checked out against our key.
    std::int64_t time_ns = 0;
    bool signed_ = false;    // the packet carries a tag
    bool verified = false;   // ... and it is right for the key given to decode_sync
};

enum class ReplyKind : std::uint16_t { Started = 1, Finished = 2, Abandoned = 3, Missing = 4 };
const char* to_string(ReplyKind k);

struct Reply {
    ReplyKind kind = ReplyKind::Started;
    std::int32_t stream = 0;
    std::uint64_t session = 0;
    std::uint32_t seq = 0;
    std::int32_t step = 0;
    std::uint64_t packets_sent = 0;
    std::uint64_t packets_total = 0;
};

// With a key, the sync is authenticated: flags bit 0, then time_ns (i64) and an
// HMAC-SHA-256 tag (32 bytes) of everything before it follow the location.
std::vector<std::uint8_t> encode(const Sync& s, const SyncKey* key = nullptr);
std::vector<std::uint8_t> encode(const Reply& r);
// Return nullopt for anything malformed (bad magic, version, length, location).
// A tagged sync is verified against `key` when one is given (Sync::verified).
std::optional<Sync> decode_sync(const std::uint8_t* data, std::size_t length, const SyncKey* key = nullptr);
std::optional<Reply> decode_reply(const std::uint8_t* data, std::size_t length);

// A sync supersedes the last accepted one if it belongs to another session or
// has a higher sequence number; repeats (the controller resends) do not.
bool supersedes(const Sync& incoming, const std::optional<Sync>& current);

// A location is a plain file name: no '/', no "..", not empty, printable.
bool location_is_safe(const std::string& location);

}  // namespace slabcast::control
