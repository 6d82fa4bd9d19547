// Tags on data datagrams (issue 59): the GMAC against libsodium's AES-256-GCM
// on the same bytes, keys that differ by stream and session, nonces that never
// repeat, the replay window, and every reason a datagram is dropped before a
// byte of it is placed.
#include "slabcast/packet_tag.h"

#include <catch2/catch.hpp>
#include <sodium.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

using namespace slabcast::tag;

namespace {

Key shared_key(std::uint8_t seed) {
    Key k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(seed + 7 * i);
    return k;
}

// A datagram of `length` bytes and room for its trailer.
std::vector<std::uint8_t> datagram(std::size_t length, std::uint8_t fill) {
    std::vector<std::uint8_t> d(length + kTrailerBytes);
    for (std::size_t i = 0; i < length; ++i) d[i] = static_cast<std::uint8_t>(fill + i * 31);
    return d;
}

}  // namespace

TEST_CASE("packet tag: the GMAC is AES-256-GCM's tag over nothing, the bytes as additional data") {
    // The GCM specification's test case 13: a zero key, a zero nonce (sequence 0), nothing at all.
    Gmac zero(Key{});
    std::uint8_t empty[kTagBytes];
    zero.tag(nullptr, 0, 0, empty);
    const std::uint8_t spec[kTagBytes] = {0x53, 0x0f, 0x8a, 0xfb, 0xc7, 0x45, 0x36, 0xb9,
                                          0xa9, 0x63, 0xb4, 0xf1, 0xc4, 0xcb, 0x73, 0x8b};
    CHECK(std::memcmp(empty, spec, kTagBytes) == 0);
    // libsodium's AES-256-GCM on the same bytes, where this CPU runs it (AES-NI and PCLMUL).
    REQUIRE(sodium_init() >= 0);
    if (!crypto_aead_aes256gcm_is_available()) return;
    const Key key = derive(shared_key(1), 3, 1234567890123ull);
    Gmac gmac(key);
    for (std::size_t length : {std::size_t{1}, std::size_t{17}, std::size_t{8952}}) {
        const std::vector<std::uint8_t> bytes = datagram(length, 5);
        const std::uint64_t sequence = 0x0102030405060708ull + length;
        std::uint8_t ours[kTagBytes], theirs[kTagBytes];
        gmac.tag(bytes.data(), length, sequence, ours);
        std::uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES] = {};
        std::memcpy(nonce, &sequence, 8);
        unsigned long long n = 0;
        std::uint8_t nothing[1] = {};  // the message: none
        crypto_aead_aes256gcm_encrypt_detached(nothing, theirs, &n, nothing, 0, bytes.data(), length, nullptr, nonce,
                                               key.data());
        CHECK(std::memcmp(ours, theirs, kTagBytes) == 0);
    }
}

TEST_CASE("packet tag: keys differ by stream, session and shared key; a session's nonces never repeat") {
    std::set<Key> keys;
    for (std::uint8_t seed : {1, 2})
        for (std::uint32_t stream : {0u, 1u, 31u})
            for (std::uint64_t session : {1ull, 2ull, 1765000000000000000ull}) keys.insert(derive(shared_key(seed), stream, session));
    CHECK(keys.size() == 2 * 3 * 3);

    Tagger tagger(shared_key(1), 0, 42);
    std::set<std::uint64_t> nonces;
    for (int i = 0; i < 1000; ++i) {
        std::vector<std::uint8_t> d = datagram(100, static_cast<std::uint8_t>(i));
        tagger.seal(d.data(), 100);
        std::uint64_t session = 0, sequence = 0;
        std::memcpy(&session, d.data() + 100, 8);
        std::memcpy(&sequence, d.data() + 108, 8);
        CHECK(session == 42);
        nonces.insert(sequence);
    }
    CHECK(nonces.size() == 1000);
    CHECK(tagger.next_sequence() == 1000);
}

TEST_CASE("packet tag: every datagram sealed checks out once, in any order within the window") {
    Tagger tagger(shared_key(9), 4, 77);
    Checker checker(shared_key(9), 4);
    std::vector<std::vector<std::uint8_t>> sent;
    for (int i = 0; i < 64; ++i) {
        std::vector<std::uint8_t> d = datagram(8952 - i, static_cast<std::uint8_t>(i));
        const std::size_t length = tagger.seal(d.data(), d.size() - kTrailerBytes);
        CHECK(length == d.size());
        sent.push_back(d);
    }
    // Reordered: every second one first, then the rest.
    for (int pass = 0; pass < 2; ++pass)
        for (std::size_t i = static_cast<std::size_t>(pass); i < sent.size(); i += 2) {
            std::size_t payload = 0;
            CHECK(checker.check(sent[i].data(), sent[i].size(), payload) == Verdict::Ok);
            CHECK(payload == sent[i].size() - kTrailerBytes);
        }
    std::size_t payload = 0;
    for (const auto& d : sent) CHECK(checker.check(d.data(), d.size(), payload) == Verdict::Replayed);
    CHECK(checker.session() == 77);
}

TEST_CASE("packet tag: each way a datagram is refused, by name, and none of them moves the window") {
    const Key key = shared_key(3);
    Tagger tagger(key, 2, 1000);
    Checker checker(key, 2);
    std::size_t payload = 0;
    auto sealed = [&](std::uint8_t fill) {
        std::vector<std::uint8_t> d = datagram(500, fill);
        tagger.seal(d.data(), 500);
        return d;
    };
    const std::vector<std::uint8_t> first = sealed(1);
    REQUIRE(checker.check(first.data(), first.size(), payload) == Verdict::Ok);

    SECTION("too short for a trailer") {
        CHECK(checker.check(first.data(), kTrailerBytes - 1, payload) == Verdict::TooShort);
        CHECK(std::string(to_string(Verdict::TooShort)) == "too short for a tag");
    }
    SECTION("a bit flipped anywhere: the payload, the session, the sequence or the tag") {
        const std::vector<std::uint8_t> next = sealed(2);
        for (std::size_t at : {std::size_t{0}, std::size_t{499}, std::size_t{500}, std::size_t{508}, std::size_t{531}}) {
            std::vector<std::uint8_t> bad = next;
            bad[at] ^= 0x10;
            const Verdict v = checker.check(bad.data(), bad.size(), payload);
            // A session lowered by the flip is older than the one received.
            CHECK((v == Verdict::BadTag || (at == 500 && v == Verdict::TooOld)));
        }
        CHECK(checker.check(next.data(), next.size(), payload) == Verdict::Ok);  // the real one still goes in
    }
    SECTION("a truncated datagram") {
        const std::vector<std::uint8_t> next = sealed(2);
        CHECK(checker.check(next.data() + 1, next.size() - 1, payload) == Verdict::BadTag);
        CHECK(checker.check(next.data(), next.size() - 1, payload) == Verdict::BadTag);
    }
    SECTION("replayed, and fallen below the window") {
        CHECK(checker.check(first.data(), first.size(), payload) == Verdict::Replayed);
        for (std::uint64_t i = 0; i < ReplayWindow::kWidth; ++i) {
            const std::vector<std::uint8_t> d = sealed(static_cast<std::uint8_t>(i));
            REQUIRE(checker.check(d.data(), d.size(), payload) == Verdict::Ok);
        }
        CHECK(checker.check(first.data(), first.size(), payload) == Verdict::TooOld);
    }
    SECTION("another stream's datagram, or one sealed under another shared key") {
        Tagger other_stream(key, 3, 1000);
        Tagger other_key(shared_key(4), 2, 1000);
        for (Tagger* t : {&other_stream, &other_key}) {
            std::vector<std::uint8_t> d = datagram(500, 9);
            for (int i = 0; i < 5; ++i) t->seal(d.data(), 500);  // past the sequence numbers taken
            CHECK(checker.check(d.data(), d.size(), payload) == Verdict::BadTag);
        }
    }
    SECTION("a sender started again: its newer session is taken, the older one is too old from then on") {
        const std::vector<std::uint8_t> before = sealed(5);
        Tagger again(key, 2, 2000);
        std::vector<std::uint8_t> d = datagram(500, 6);
        again.seal(d.data(), 500);
        CHECK(checker.check(d.data(), d.size(), payload) == Verdict::Ok);
        CHECK(checker.session() == 2000);
        CHECK(checker.check(before.data(), before.size(), payload) == Verdict::TooOld);
    }
    SECTION("a forged newer session is refused and takes nothing over") {
        std::vector<std::uint8_t> forged = sealed(7);
        const std::uint64_t later = 5000;
        std::memcpy(forged.data() + 500, &later, 8);
        CHECK(checker.check(forged.data(), forged.size(), payload) == Verdict::BadTag);
        CHECK(checker.session() == 1000);
        const std::vector<std::uint8_t> next = sealed(8);
        CHECK(checker.check(next.data(), next.size(), payload) == Verdict::Ok);
    }
}

TEST_CASE("packet tag: the replay window keeps the newest and the numbers below it, each once") {
    ReplayWindow w;
    CHECK(w.judge(10) == Verdict::Ok);
    w.take(10);
    CHECK(w.judge(10) == Verdict::Replayed);
    CHECK(w.judge(9) == Verdict::Ok);
    w.take(9);
    CHECK(w.judge(9) == Verdict::Replayed);
    // Jumping ahead clears what was passed over: never seen, still welcome.
    w.take(10 + ReplayWindow::kWidth - 1);
    CHECK(w.judge(11) == Verdict::Ok);
    CHECK(w.judge(10) == Verdict::Replayed);
    CHECK(w.judge(9) == Verdict::TooOld);
    w.take(10 + 3 * ReplayWindow::kWidth);
    CHECK(w.judge(10 + 2 * ReplayWindow::kWidth + 1) == Verdict::Ok);
    CHECK(w.judge(10 + 2 * ReplayWindow::kWidth) == Verdict::TooOld);
    w.reset();
    CHECK(w.judge(0) == Verdict::Ok);
}
