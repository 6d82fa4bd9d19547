// The quad wire format, byte for byte (Balman et al., 2012, section 4.2, docs/wire-format.md).
#include "slabcast/quad_packet.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace slabcast;

TEST_CASE("quad packet matches golden bytes") {
    std::vector<std::uint8_t> p(quad::packet_bytes(2));
    quad::write_header(p.data(), 7, 2);
    quad::write_record(p.data(), 0, quad::Record{1, 2, 3, 1.5f});
    quad::write_record(p.data(), 1, quad::Record{1023, -1, 65536, -2.0f});
    const std::vector<std::uint8_t> golden = {
        0x07, 0x00, 0x00, 0x00,  0x02, 0x00, 0x00, 0x00,   // batch 7, n 2
        0x01, 0x00, 0x00, 0x00,  0x02, 0x00, 0x00, 0x00,   // x 1, y 2
        0x03, 0x00, 0x00, 0x00,  0x00, 0x00, 0xc0, 0x3f,   // z 3, v 1.5f
        0xff, 0x03, 0x00, 0x00,  0xff, 0xff, 0xff, 0xff,   // x 1023, y -1
        0x00, 0x00, 0x01, 0x00,  0x00, 0x00, 0x00, 0xc0,   // z 65536, v -2.0f
    };
    CHECK(p == golden);
}

TEST_CASE("a full packet is 8968 bytes and fits a 9000-byte MTU") {
    CHECK(quad::packet_bytes(quad::kMaxRecords) == 8968);
    CHECK(quad::packet_bytes(quad::kMaxRecords) <= 9000 - 20 - 8);
    CHECK(quad::packet_bytes(quad::kMaxRecords + 1) > 9000 - 20 - 8);
}

TEST_CASE("encode then decode round trip") {
    std::vector<std::uint8_t> p(quad::kMaxPacketBytes);
    quad::write_header(p.data(), 123456, quad::kMaxRecords);
    for (int i = 0; i < quad::kMaxRecords; ++i)
        quad::write_record(p.data(), i, quad::Record{i, 2 * i, 3 * i, 0.25f * static_cast<float>(i)});
    quad::Header h{};
    REQUIRE(quad::parse_header(p.data(), p.size(), h) == quad::ParseResult::Ok);
    CHECK(h.batch == 123456);
    CHECK(h.n == quad::kMaxRecords);
    for (int i = 0; i < quad::kMaxRecords; ++i) {
        const auto r = quad::read_record(p.data(), i);
        CHECK(r.x == i);
        CHECK(r.y == 2 * i);
        CHECK(r.z == 3 * i);
        CHECK(r.v == 0.25f * static_cast<float>(i));
    }
}

TEST_CASE("framing errors are classified") {
    std::vector<std::uint8_t> p(quad::kMaxPacketBytes + 16, 0);
    quad::Header h{};
    CHECK(quad::parse_header(p.data(), 0, h) == quad::ParseResult::TooShort);
    CHECK(quad::parse_header(p.data(), 7, h) == quad::ParseResult::TooShort);

    quad::write_header(p.data(), 1, 0);
    CHECK(quad::parse_header(p.data(), 8, h) == quad::ParseResult::BadCount);
    quad::write_header(p.data(), 1, 561);
    CHECK(quad::parse_header(p.data(), quad::packet_bytes(561), h) == quad::ParseResult::BadCount);
    quad::write_header(p.data(), 1, -3);
    CHECK(quad::parse_header(p.data(), 40, h) == quad::ParseResult::BadCount);

    quad::write_header(p.data(), 1, 2);
    CHECK(quad::parse_header(p.data(), quad::packet_bytes(2) - 1, h) == quad::ParseResult::BadLength);
    CHECK(quad::parse_header(p.data(), quad::packet_bytes(2) + 16, h) == quad::ParseResult::BadLength);
    CHECK(quad::parse_header(p.data(), quad::packet_bytes(2), h) == quad::ParseResult::Ok);
}
