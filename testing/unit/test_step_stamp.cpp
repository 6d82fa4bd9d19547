// The step stamp, byte for byte (docs/wire-format.md, "Step stamp"), and
// every datagram that only looks like one refused.
#include "slabcast/step_stamp.h"
#include "slabcast/quad_packet.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <vector>

using namespace slabcast;

namespace {
std::vector<std::uint8_t> bytes_of(const stamp::StepStamp& s) {
    std::vector<std::uint8_t> p(stamp::kBytes);
    stamp::write(p.data(), s);
    return p;
}
const stamp::StepStamp kStamp{7, 2, 0x0102030405060708};
}  // namespace

TEST_CASE("step stamp matches golden bytes and reads back") {
    const std::vector<std::uint8_t> golden = {
        0x53, 0x43, 0x54, 0x80,  0x01, 0x00, 0x00, 0x00,   // magic "SCT" 0x80, version 1, flags 0, reserved 0
        0x07, 0x00, 0x00, 0x00,  0x02, 0x00, 0x00, 0x00,   // step 7, slab 2
        0x08, 0x07, 0x06, 0x05,  0x04, 0x03, 0x02, 0x01,   // sent_ns
    };
    const auto p = bytes_of(kStamp);
    CHECK(p == golden);
    CHECK(stamp::is_stamp(p.data(), p.size()));
    stamp::StepStamp got;
    REQUIRE(stamp::parse(p.data(), p.size(), got) == stamp::ParseResult::Ok);
    CHECK(got.step == 7);
    CHECK(got.slab == 2);
    CHECK(got.sent_ns == 0x0102030405060708);
}

TEST_CASE("a step stamp is told apart from run and quad packets") {
    const auto p = bytes_of(kStamp);
    CHECK_FALSE(run::is_run_packet(p.data(), p.size()));
    // As a quad packet its batch (the first word) is negative: refused.
    quad::Header q;
    CHECK((quad::parse_header(p.data(), p.size(), q) != quad::ParseResult::Ok || q.batch < 0));
    std::array<std::uint8_t, run::kHeaderBytes> run_bytes{};
    run::Header h;
    h.count = 1;
    run::write_header(run_bytes.data(), h);
    CHECK_FALSE(stamp::is_stamp(run_bytes.data(), run_bytes.size()));
}

TEST_CASE("a datagram that is not a whole, plausible step stamp is refused, naming why") {
    stamp::StepStamp got;
    auto p = bytes_of(kStamp);
    CHECK(stamp::parse(p.data(), 23, got) == stamp::ParseResult::BadLength);
    p.push_back(0);
    CHECK(stamp::parse(p.data(), p.size(), got) == stamp::ParseResult::BadLength);

    const auto changed = [](std::size_t at, std::uint8_t value) {
        auto q = bytes_of(kStamp);
        q[at] = value;
        return q;
    };
    const auto parse = [&](const std::vector<std::uint8_t>& q) { return stamp::parse(q.data(), q.size(), got); };
    CHECK(parse(changed(0, 0x54)) == stamp::ParseResult::BadMagic);
    CHECK(parse(changed(4, 2)) == stamp::ParseResult::BadVersion);
    CHECK(parse(changed(5, 1)) == stamp::ParseResult::BadReserved);
    CHECK(parse(changed(7, 1)) == stamp::ParseResult::BadReserved);
    CHECK(parse(changed(11, 0x80)) == stamp::ParseResult::BadStep);   // step < 0
    CHECK(parse(changed(23, 0x80)) == stamp::ParseResult::BadTime);   // sent_ns < 0
    auto zero = bytes_of(stamp::StepStamp{7, 2, 0});
    CHECK(parse(zero) == stamp::ParseResult::BadTime);
    for (auto r : {stamp::ParseResult::BadLength, stamp::ParseResult::BadMagic, stamp::ParseResult::BadVersion,
                   stamp::ParseResult::BadReserved, stamp::ParseResult::BadStep, stamp::ParseResult::BadTime})
        CHECK(std::strlen(stamp::to_string(r)) > 8);
}
