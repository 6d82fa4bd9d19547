// A tag on every data datagram (issue 59), so that nobody but the sender
// writes into the slabs a scientist is looking at: the control packets carry
// an HMAC, and the paper's WAN crossed networks its sites did not control
// (Balman et al., 2012, section 4), where forging a source address is easy.
//
// The tag follows the datagram as a 32-byte trailer:
//
//   uint64 session; uint64 sequence; uint8 tag[16]
//
// session: the sender's start (CLOCK_REALTIME, ns), new for every run, so
// that a restarted sender's sequence numbers never meet an old key; sequence:
// 0, 1, 2, ... for each datagram of the session. The key of a stream's
// session comes from the shared key (`slabcast keygen`) through keyed BLAKE2b
// over the stream and the session: no two streams or runs share a key. The
// tag is AES-256-GCM's over nothing, with the datagram and the trailer's
// session and sequence as its additional data and the sequence as its nonce
// (GMAC): 7.3 GB/s a core here, the fastest sound tag measured
// (docs/performance.md, "Packet tags"). A nonce is never used twice under a
// key: the sequence only grows within a session.
//
// A receiver (Checker) judges a datagram before a byte of it is placed:
// too short for a trailer, of an older session or below the replay window
// (too old), seen already (replayed), or a tag that does not check out (bad
// tag). Only a datagram whose tag checks out moves the replay window or
// starts a newer session.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace slabcast::tag {

constexpr std::size_t kTagBytes = 16;
constexpr std::size_t kTrailerBytes = 8 + 8 + kTagBytes;

using Key = std::array<std::uint8_t, 32>;

// The key of one stream's session, derived from the shared key.
Key derive(const Key& shared, std::uint32_t stream, std::uint64_t session);

// GMAC under one key: the tag of `length` bytes for a sequence number.
class Gmac {
public:
    explicit Gmac(const Key& key);
    ~Gmac();
    void rekey(const Key& key);  // allocates nothing
    Gmac(const Gmac&) = delete;
    Gmac& operator=(const Gmac&) = delete;
    void tag(const std::uint8_t* bytes, std::size_t length, std::uint64_t sequence, std::uint8_t out[kTagBytes]);

private:
    struct Context;
    std::unique_ptr<Context> context_;
};

// A stream's sending side: seals each datagram in turn.
class Tagger {
public:
    Tagger(const Key& shared, std::uint32_t stream, std::uint64_t session);
    // Writes the trailer after datagram[0..length): the caller leaves
    // kTrailerBytes of room there. Returns the length sent.
    std::size_t seal(std::uint8_t* datagram, std::size_t length);
    std::uint64_t session() const { return session_; }
    std::uint64_t next_sequence() const { return sequence_; }

private:
    std::uint64_t session_, sequence_ = 0;
    Gmac gmac_;
};

enum class Verdict { Ok, TooShort, BadTag, Replayed, TooOld };
const char* to_string(Verdict v);

// The sequence numbers of one session seen lately: the newest and the
// kWidth - 1 below it, one bit each.
class ReplayWindow {
public:
    static constexpr std::uint64_t kWidth = 4096;
    Verdict judge(std::uint64_t sequence) const;  // Ok, Replayed or TooOld; changes nothing
    void take(std::uint64_t sequence);            // a datagram whose tag checked out
    void reset();

private:
    bool any_ = false;
    std::uint64_t newest_ = 0;
    std::array<std::uint64_t, kWidth / 64> seen_{};
};

// A stream's receiving side. A datagram of a session newer than the one
// being received costs a key derivation (keyed BLAKE2b of 33 bytes and
// AES's key schedule) on top of its tag: a forger offering a new session in
// every datagram costs the receiver about twice what one sending bad tags
// does, and is never let ahead of a real sender (no limit on derivations to
// be used up first).
class Checker {
public:
    Checker(const Key& shared, std::uint32_t stream);
    ~Checker();
    // Judges datagram[0..length), its trailer at its end; on Ok,
    // `payload_length` is what precedes the trailer.
    Verdict check(const std::uint8_t* datagram, std::size_t length, std::size_t& payload_length);
    std::uint64_t session() const { return session_; }

private:
    Key shared_;
    std::uint32_t stream_;
    std::uint64_t session_ = 0;
    bool receiving_ = false;     // a session proved, gmac_ its
    std::unique_ptr<Gmac> gmac_;
    ReplayWindow window_;
    // The last newer session offered and its GMAC, made once and rekeyed:
    // a datagram repeating it pays for no key, a proven one swaps in.
    std::uint64_t offered_ = 0;
    bool offered_keyed_ = false;
    std::unique_ptr<Gmac> offered_gmac_;
};

}  // namespace slabcast::tag
