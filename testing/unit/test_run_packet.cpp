// The run wire format, byte for byte (docs/wire-format.md, "Run packet").
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace slabcast;

namespace {
std::vector<std::uint8_t> packet(const run::Header& h, const std::vector<float>& values) {
    std::vector<std::uint8_t> p(run::packet_bytes(static_cast<int>(values.size())));
    std::uint8_t* payload = run::write_header(p.data(), h);
    std::memcpy(payload, values.data(), values.size() * sizeof(float));
    return p;
}

run::Header header(int count) {
    run::Header h;
    h.step = 7;
    h.slab = 2;
    h.x = 1;
    h.y = 2;
    h.z = 3;
    h.count = count;
    return h;
}
}  // namespace

TEST_CASE("run packet matches golden bytes") {
    const std::vector<std::uint8_t> p = packet(header(2), {1.5f, -2.0f});
    const std::vector<std::uint8_t> golden = {
        0x53, 0x43, 0x52, 0x80,  0x01, 0x00, 0x00, 0x00,   // magic "SCR" 0x80, version 1, codec none, parameter 0
        0x07, 0x00, 0x00, 0x00,  0x02, 0x00, 0x00, 0x00,   // step 7, slab 2
        0x01, 0x00, 0x00, 0x00,  0x02, 0x00, 0x00, 0x00,   // x 1, y 2
        0x03, 0x00, 0x00, 0x00,  0x02, 0x00, 0x00, 0x00,   // z 3, count 2
        0x08, 0x00, 0x00, 0x00,                            // payload bytes 8
        0x00, 0x00, 0xc0, 0x3f,  0x00, 0x00, 0x00, 0xc0,   // 1.5f, -2.0f
    };
    CHECK(p == golden);
    // The first word is negative: never a quad packet's batch (a step >= 0).
    std::int32_t first = 0;
    std::memcpy(&first, p.data(), 4);
    CHECK(first < 0);
    CHECK(run::is_run_packet(p.data(), p.size()));
}

TEST_CASE("a run of the progressive order sets bit 7 of the codec byte and reads back so") {
    run::Header h = header(2);
    h.progressive = true;
    std::vector<std::uint8_t> p = packet(h, {1.5f, -2.0f});
    CHECK(p[5] == 0x80);  // codec none, progressive
    run::Header got;
    REQUIRE(run::parse_header(p.data(), p.size(), got) == run::ParseResult::Ok);
    CHECK(got.progressive);
    CHECK(got.codec == run::Codec::None);
    p[5] = 0x82;  // zfp, progressive: the parameter decides
    CHECK(run::parse_header(p.data(), p.size(), got) == run::ParseResult::BadCodec);
    p[5] = 0x40;  // no codec of that number
    CHECK(run::parse_header(p.data(), p.size(), got) == run::ParseResult::BadCodec);
}

TEST_CASE("a full run packet carries 2233 values in a quad packet's 8968 bytes") {
    CHECK(run::packet_bytes(run::kMaxValues) == 8968);
    CHECK(run::packet_bytes(run::kMaxValues) <= 9000 - 20 - 8);
    CHECK(run::kMaxValues >= 3.98 * quad::kMaxRecords);
}

TEST_CASE("run packet encode then decode round trip") {
    std::vector<float> values(run::kMaxValues);
    for (int i = 0; i < run::kMaxValues; ++i) values[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(i);
    run::Header h = header(run::kMaxValues);
    h.step = 123456;
    const std::vector<std::uint8_t> p = packet(h, values);
    run::Header got;
    REQUIRE(run::parse_header(p.data(), p.size(), got) == run::ParseResult::Ok);
    CHECK(got.step == 123456);
    CHECK(got.slab == 2);
    CHECK((got.x == 1 && got.y == 2 && got.z == 3));
    CHECK(got.count == run::kMaxValues);
    CHECK(got.payload_bytes == 4u * run::kMaxValues);
    CHECK(std::memcmp(run::payload(p.data()), values.data(), values.size() * 4) == 0);
}

TEST_CASE("every bad run packet is classified") {
    run::Header h;
    const std::vector<std::uint8_t> good = packet(header(3), {1, 2, 3});
    auto parse = [&](std::vector<std::uint8_t> p, std::size_t length) { return run::parse_header(p.data(), length, h); };
    auto patched = [&](std::size_t offset, std::int64_t value, std::size_t bytes) {
        std::vector<std::uint8_t> p = good;
        std::memcpy(p.data() + offset, &value, bytes);
        return p;
    };
    CHECK(parse(good, good.size()) == run::ParseResult::Ok);
    CHECK(parse(good, 0) == run::ParseResult::TooShort);
    CHECK(parse(good, 35) == run::ParseResult::TooShort);
    CHECK(parse(patched(0, 7, 4), good.size()) == run::ParseResult::BadMagic);  // a quad packet's batch
    CHECK(parse(patched(4, 2, 1), good.size()) == run::ParseResult::BadVersion);
    CHECK(parse(patched(5, 9, 1), good.size()) == run::ParseResult::BadCodec);
    CHECK(parse(patched(28, 0, 4), good.size()) == run::ParseResult::BadCount);
    CHECK(parse(patched(28, -1, 4), good.size()) == run::ParseResult::BadCount);
    CHECK(parse(patched(28, run::kMaxValues + 1, 4), good.size()) == run::ParseResult::BadCount);
    CHECK(parse(patched(28, 2, 4), good.size()) == run::ParseResult::BadLength);         // count disagrees with payload
    CHECK(parse(patched(32, 0xfffffffc, 4), good.size()) == run::ParseResult::BadLength);  // wraps 32 bits
    CHECK(parse(good, good.size() - 1) == run::ParseResult::BadLength);
    CHECK(parse(good, good.size() + 0) == run::ParseResult::Ok);
    std::vector<std::uint8_t> longer = good;
    longer.push_back(0);
    CHECK(parse(longer, longer.size()) == run::ParseResult::BadLength);
    CHECK(parse(patched(8, -1, 4), good.size()) == run::ParseResult::BadStep);
    CHECK_FALSE(run::is_run_packet(good.data(), 3));
}
