#include "slabcast/control_packets.h"

#include <catch2/catch.hpp>

using namespace slabcast::control;

TEST_CASE("sync packet golden bytes and round trip") {
    Sync s{0x0102030405060708ULL, 9, 42, "step_00042.raw"};
    const auto bytes = encode(s);
    REQUIRE(bytes.size() == 28 + 14);
    const std::vector<std::uint8_t> head = {
        'S', 'C', 'S', 'Y', 0x01, 0x00, 0x00, 0x00,              // magic, version 1, flags 0
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,          // session
        0x09, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00,          // seq 9, step 42
        0x0e, 0x00, 0x00, 0x00,                                  // location length 14, reserved
    };
    CHECK(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 28) == head);
    const auto back = decode_sync(bytes.data(), bytes.size());
    REQUIRE(back);
    CHECK(back->session == s.session);
    CHECK(back->seq == 9);
    CHECK(back->step == 42);
    CHECK(back->location == "step_00042.raw");
}

TEST_CASE("malformed sync packets are refused") {
    auto bytes = encode(Sync{1, 1, 1, "a.raw"});
    CHECK_FALSE(decode_sync(bytes.data(), bytes.size() - 1));
    CHECK_FALSE(decode_sync(bytes.data(), 10));
    auto bad = bytes;
    bad[0] ^= 1;
    CHECK_FALSE(decode_sync(bad.data(), bad.size()));
    bad = bytes;
    bad[4] = 2;  // version 2
    CHECK_FALSE(decode_sync(bad.data(), bad.size()));
    for (const char* loc : {"../etc/passwd", "/etc/passwd", "a/b", "..", ""}) {
        const auto b = encode(Sync{1, 1, 1, loc});
        CHECK_FALSE(decode_sync(b.data(), b.size()));
    }
}

TEST_CASE("reply round trip") {
    Reply r{ReplyKind::Abandoned, 3, 77, 5, 12, 1000, 2000};
    const auto bytes = encode(r);
    REQUIRE(bytes.size() == 48);
    const auto back = decode_reply(bytes.data(), bytes.size());
    REQUIRE(back);
    CHECK(back->kind == ReplyKind::Abandoned);
    CHECK(back->stream == 3);
    CHECK(back->session == 77);
    CHECK(back->seq == 5);
    CHECK(back->step == 12);
    CHECK(back->packets_sent == 1000);
    CHECK(back->packets_total == 2000);
    CHECK_FALSE(decode_reply(bytes.data(), 47));
}

TEST_CASE("a sync supersedes an older one of its session, or any of another session") {
    const Sync a{1, 5, 0, "x"};
    CHECK(supersedes(a, std::nullopt));
    CHECK_FALSE(supersedes(Sync{1, 5, 9, "y"}, a));  // a resend
    CHECK_FALSE(supersedes(Sync{1, 4, 9, "y"}, a));
    CHECK(supersedes(Sync{1, 6, 9, "y"}, a));
    CHECK(supersedes(Sync{2, 1, 9, "y"}, a));  // a restarted controller
}

TEST_CASE("authenticated syncs: tag over the packet, verified only with the right key") {
    SyncKey key, other;
    key.bytes.fill(7);
    other.bytes.fill(8);
    Sync s{42, 3, 5, "step_00005.raw"};
    s.time_ns = 1'700'000'000'000'000'000;
    const auto bytes = encode(s, &key);
    REQUIRE(bytes.size() == 28 + 14 + 8 + 32);
    CHECK(bytes[6] == 1);  // flags: authenticated
    const auto good = decode_sync(bytes.data(), bytes.size(), &key);
    REQUIRE(good);
    CHECK(good->signed_);
    CHECK(good->verified);
    CHECK(good->time_ns == s.time_ns);
    CHECK_FALSE(decode_sync(bytes.data(), bytes.size(), &other)->verified);
    CHECK_FALSE(decode_sync(bytes.data(), bytes.size(), nullptr)->verified);
    for (std::size_t i : {std::size_t{8}, std::size_t{20}, std::size_t{30}, std::size_t{44}, bytes.size() - 1}) {
        auto tampered = bytes;
        tampered[i] ^= 0x10;
        const auto t = decode_sync(tampered.data(), tampered.size(), &key);
        CHECK_FALSE((t && t->verified));
    }
    const auto plain = encode(s);
    CHECK(plain.size() == 28 + 14);
    CHECK_FALSE(decode_sync(plain.data(), plain.size(), &key)->signed_);
    auto unknown_flag = plain;
    unknown_flag[6] = 2;
    CHECK_FALSE(decode_sync(unknown_flag.data(), unknown_flag.size()));
}
