#include "mover/wire.h"

#include <xxhash.h>
// XXH3 through xxhash's run-time dispatch: AVX2 (or AVX-512) where the CPU
// has it, else SSE2. Debian's libxxhash is built for plain x86-64, whose
// SSE2 XXH3 is a third of the AVX2 one's speed (docs/mover.md, "Measured choices").
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <vector>

namespace slabcast::mover {

void encode_header(const Frame& f, std::uint8_t* out) {
    std::uint8_t* p = out;
    put_le<std::uint32_t>(p, kMagic);
    put_le<std::uint16_t>(p, kVersion);
    put_le<std::uint16_t>(p, static_cast<std::uint16_t>(f.kind));
    put_le<std::uint64_t>(p, f.transfer);
    put_le<std::uint32_t>(p, f.file);
    put_le<std::uint32_t>(p, f.length);
    put_le<std::uint64_t>(p, f.offset);
    put_le<std::uint64_t>(p, f.checksum);
    put_le<std::uint64_t>(p, f.extra);
}

std::optional<Frame> decode_header(const std::uint8_t* in, std::string* problem) {
    auto fail = [&](const std::string& why) -> std::optional<Frame> {
        if (problem) *problem = why;
        return std::nullopt;
    };
    const std::uint8_t* p = in;
    if (take_le<std::uint32_t>(p) != kMagic) return fail("not a slabcast mover frame (bad magic)");
    if (const auto version = take_le<std::uint16_t>(p); version != kVersion)
        return fail("unsupported mover protocol version " + std::to_string(version) + " (this end speaks " +
                    std::to_string(kVersion) + ": both ends need the same slabcast release)");
    Frame f;
    const auto kind = take_le<std::uint16_t>(p);
    if (kind < static_cast<std::uint16_t>(Kind::Hello) || kind > static_cast<std::uint16_t>(kLastKind))
        return fail("unknown frame kind");
    f.kind = static_cast<Kind>(kind);
    f.transfer = take_le<std::uint64_t>(p);
    f.file = take_le<std::uint32_t>(p);
    f.length = take_le<std::uint32_t>(p);
    f.offset = take_le<std::uint64_t>(p);
    f.checksum = take_le<std::uint64_t>(p);
    f.extra = take_le<std::uint64_t>(p);
    if (f.length > kMaxPayload) return fail("frame payload too large");
    if ((f.kind == Kind::Zeros || f.kind == Kind::FileEnd || f.kind == Kind::Done || f.kind == Kind::Bye) &&
        f.length != 0)
        return fail("frame of this kind carries no payload");
    return f;
}

PieceBuffer piece_buffer() {
    void* p = std::aligned_alloc(4096, kCachePiece);
    if (!p) throw std::bad_alloc();
    return PieceBuffer(static_cast<std::uint8_t*>(p), &std::free);
}

std::uint64_t checksum(const void* data, std::size_t length) { return XXH3_64bits(data, length); }

RunningChecksum::RunningChecksum() : state_(XXH3_createState()) {
    if (!state_) throw std::bad_alloc();
    XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

RunningChecksum::~RunningChecksum() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void RunningChecksum::add(const void* data, std::size_t length) {
    XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, length);
}

std::uint64_t RunningChecksum::value() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

std::uint64_t zeros_checksum(std::uint64_t length) {
    static const std::vector<std::uint8_t> zeros(64 << 10);
    thread_local std::map<std::uint64_t, std::uint64_t> known;
    if (auto it = known.find(length); it != known.end()) return it->second;
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    for (std::uint64_t left = length; left;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, zeros.size()));
        XXH3_64bits_update(state, zeros.data(), n);
        left -= n;
    }
    const std::uint64_t sum = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    if (known.size() < 64) known[length] = sum;  // the block size, and a few file tails
    return sum;
}

std::uint64_t file_checksum(const std::uint64_t* block_checksums, std::size_t blocks) {
    std::vector<std::uint8_t> words(blocks * 8);
    std::uint8_t* p = words.data();
    for (std::size_t i = 0; i < blocks; ++i) put_le<std::uint64_t>(p, block_checksums[i]);
    return XXH3_64bits(words.data(), words.size());
}

}  // namespace slabcast::mover
