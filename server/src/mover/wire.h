// The data mover's wire format (docs/mover.md): every message on its TCP
// streams is a frame, a fixed 48-byte little-endian header and a payload.
// Files travel as tagged blocks (file id, offset, length, checksum), so blocks
// may cross any stream in any order and no file needs a control exchange;
// the manifest travels as blocks too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace slabcast::mover {

inline constexpr std::uint32_t kMagic = 0x424d4353;  // "SCMB"
// 2: file checksums are made of block checksums; 3: every connection begins
// with the server's Challenge, and the Hello carries the client's nonce and MAC
// (mover/auth.h); 4: the manifest may travel compressed (`file` of its
// frames, manifest_wire.h).
inline constexpr std::uint16_t kVersion = 4;
inline constexpr std::size_t kHeaderBytes = 48;
inline constexpr std::uint32_t kMaxPayload = 64u << 20;
inline constexpr std::uint32_t kDefaultBlock = 4u << 20;
// A Have's payload, at most: the server lists no more of what the destination
// holds (the rest is sent again), and the client reads no more.
inline constexpr std::uint32_t kMaxHaveBytes = 32u << 20;

enum class Kind : std::uint16_t {
    Hello = 1,     // payload: nonce, MAC (auth.h), then JSON {stream, dest, ...}: joins (or opens) transfer `transfer`
    Manifest = 2,  // payload: a part of the manifest at `offset`; `extra` = its total size; `file`: its encoding (manifest_wire.h)
    Have = 3,      // server -> client, payload: JSON, what the destination already holds (resume)
    Data = 4,      // payload: bytes [offset, offset + length) of file `file`; checksum: XXH3-64 of them
    Zeros = 5,     // no payload: `extra` zero bytes at `offset` of `file` (holes stay holes); checksum: theirs
    FileEnd = 6,   // no payload: file `file` was read whole; `extra` = size, checksum: file_checksum()
    Done = 7,      // client -> server: every block has been sent; `extra` = number of files
    Report = 8,    // server -> client, payload: JSON, the outcome per file
    Bye = 9,       // this stream has nothing more to send (it may close)
    Error = 10,    // payload: a message; the transfer is over
    FileFailed = 11,  // payload: why file `file` could not be read at the source (it vanished, ...)
    Challenge = 12,   // server -> client, first on every connection: its nonce; `extra`: what it requires (auth.h)
    Proof = 13,       // server -> client, the answer to an authenticated Hello: its MAC (auth.h)
};
inline constexpr Kind kLastKind = Kind::Proof;

struct Frame {
    Kind kind = Kind::Data;
    std::uint64_t transfer = 0;
    std::uint32_t file = 0;
    std::uint32_t length = 0;  // payload bytes after the header
    std::uint64_t offset = 0;
    std::uint64_t checksum = 0;
    std::uint64_t extra = 0;
};

// Every number the mover puts on the wire (the frame header, a sealed
// record's length and nonce, the flags in a MAC) is little-endian, written and
// read by these two, which advance `p` past it.
template <typename T>
void put_le(std::uint8_t*& p, T v) {
    static_assert(std::is_integral_v<T>);
    for (std::size_t i = 0; i < sizeof(T); ++i) *p++ = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i));
}

template <typename T>
T take_le(const std::uint8_t*& p) {
    static_assert(std::is_integral_v<T>);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(*p++) << (8 * i);
    return static_cast<T>(v);
}

void encode_header(const Frame& f, std::uint8_t* out);
// nullopt for a header that is not one (magic, version, kind, length): the
// stream is then out of step and must be dropped.
std::optional<Frame> decode_header(const std::uint8_t* in, std::string* problem = nullptr);

std::uint64_t checksum(const void* data, std::size_t length);
// Blocks are read, received and checked a piece at a time, each piece hashed
// (and looked at for zeros) while it is still in the CPU's cache, instead of
// passing over a cold 4 MiB block once per step.
inline constexpr std::size_t kCachePiece = 256u << 10;
// kCachePiece bytes to read pieces into (a stream's payloads, a reader's
// blocks to hash), page-aligned: the kernel's copy into a buffer (recv,
// pread; rep movsb) ran 45% dearer here to one 16 bytes past a page, where
// malloc puts a buffer this size (measured on a 1 GiB file, issue 22).
using PieceBuffer = std::unique_ptr<std::uint8_t, void (*)(void*)>;
PieceBuffer piece_buffer();

// checksum() built up a piece at a time (the same value as checksum()).
class RunningChecksum {
public:
    RunningChecksum();
    ~RunningChecksum();
    RunningChecksum(const RunningChecksum&) = delete;
    RunningChecksum& operator=(const RunningChecksum&) = delete;
    void add(const void* data, std::size_t length);
    std::uint64_t value() const;

private:
    void* state_;
};

// checksum() of `length` zero bytes (remembered for the common block sizes).
std::uint64_t zeros_checksum(std::uint64_t length);
// A file's checksum: XXH3-64 of its blocks' checksums in offset order, as
// little-endian 64-bit words. Both ends can build it from blocks that arrive
// (and are read) in any order, by any thread, so no end reads a file twice;
// it still changes with any byte, any block's place, and any missing block.
std::uint64_t file_checksum(const std::uint64_t* block_checksums, std::size_t blocks);

}  // namespace slabcast::mover
