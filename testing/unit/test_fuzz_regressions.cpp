// Inputs the fuzzers (testing/fuzz/) once crashed on, kept as plain tests so a
// normal build catches a regression. Each must now fail with a clear error,
// or come through as its format promises.
#include "setup/deploy_plan.h"
#include "mover/manifest.h"
#include "slabcast/descriptor.h"
#include "slabcast/json_file.h"
#include "slabcast/run_codec.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef SLABCAST_FUZZ_REGRESSIONS
#error "SLABCAST_FUZZ_REGRESSIONS must name testing/fuzz/regressions"
#endif

namespace {

std::string regression(const std::string& name) {
    std::ifstream in(std::string(SLABCAST_FUZZ_REGRESSIONS) + "/" + name, std::ios::binary);
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("a descriptor with a number too large for a double is an error naming the file, not a crash") {
    // nlohmann::json throws out_of_range (not parse_error) for it; it used to escape as std::terminate.
    const std::string text = regression("descriptor-number-overflow");
    CHECK_THROWS_WITH(slabcast::parse_descriptor(text, "x.slabcast"), Catch::Contains("x.slabcast: not valid JSON"));
    CHECK_THROWS_AS(slabcast::parse_descriptor("{\"dims\": 1e999999}", "y.slabcast"), std::runtime_error);
}

TEST_CASE("numbers that do not fit the field are errors naming the field, not undefined casts") {
    // slab_depth 1.6e31 was cast from double to int (undefined behaviour, UBSan aborted).
    CHECK_THROWS_WITH(slabcast::parse_descriptor(regression("descriptor-float-to-int"), "z.slabcast"),
                      Catch::Contains("z.slabcast: field 'slab_depth' must be a whole number"));
    const std::string base = R"({"format": "slabcast", "version": 2, "name": "c", "field": "density",
        "ghost_planes": 1, "origin": [0, 0, 0], "spacing": [1, 1, 1], "slabs": [], )";
    CHECK_THROWS_WITH(slabcast::parse_descriptor(base + R"("dims": [8, 8, 8], "slab_depth": 4294967300})", "w"),
                      Catch::Contains("field 'slab_depth' is out of range"));
    CHECK_THROWS_WITH(slabcast::parse_descriptor(base + R"("dims": [8, 8.5, 8], "slab_depth": 4})", "w"),
                      Catch::Contains("field 'dims' must be a whole number"));
    CHECK(slabcast::parse_descriptor(base + R"("dims": [8, 8, 8], "slab_depth": 4})", "w").slab_depth == 4);
}


TEST_CASE("a manifest from the network with numbers that do not fit is refused by name, not cast") {
    // "mode": 4.27e113 went through get<std::uint32_t>(), a double-to-int cast
    // out of range (fuzz_manifest under UBSan, 860,000 executions in).
    using slabcast::mover::manifest_from_json;
    CHECK_THROWS_WITH(manifest_from_json(regression("manifest-float-mode")),
                      Catch::Contains("malformed manifest (a file): field 'mode' must be a whole number"));
    const std::string head = R"({"block": 4096, "dirs": [], "files": [{"path": "a", )";
    CHECK_THROWS_WITH(manifest_from_json(head + R"("size": -1, "mode": 420, "mtime_ns": 0}]})"),
                      Catch::Contains("field 'size' is out of range"));
    CHECK_THROWS_WITH(manifest_from_json(head + R"("size": 1e300, "mode": 420, "mtime_ns": 0}]})"),
                      Catch::Contains("field 'size' must be a whole number"));
    CHECK_THROWS_WITH(manifest_from_json(head + R"("size": 1, "mode": 420, "mtime_ns": 9223372036854775808}]})"),
                      Catch::Contains("field 'mtime_ns' is out of range"));
    CHECK_THROWS_WITH(manifest_from_json(R"({"block": 4096, "dirs": {}, "files": []})"),
                      Catch::Contains("'dirs' must be a list"));
    // A size of 2^64-1 passed here once, and wrapped the block count (test_mover_receive.cpp).
    const auto m = manifest_from_json(head + R"("size": 9223372036854775807, "mode": 420, "mtime_ns": -1}]})");
    CHECK(m.files.at(0).size == 9223372036854775807ull);
    CHECK(m.files.at(0).mtime_ns == -1);
}

TEST_CASE("whole_number takes every value that fits the type and nothing else") {
    using slabcast::json_file::whole_number;
    const auto j = [](const char* text) { return nlohmann::json::parse(text); };
    CHECK(whole_number<std::uint8_t>(j("255"), "x") == 255);
    CHECK_THROWS_WITH(whole_number<std::uint8_t>(j("256"), "x"), "x is out of range");
    CHECK_THROWS_WITH(whole_number<std::uint32_t>(j("-1"), "x"), "x is out of range");
    CHECK(whole_number<std::int32_t>(j("-2147483648"), "x") == INT32_MIN);
    CHECK_THROWS_WITH(whole_number<std::int32_t>(j("2147483648"), "x"), "x is out of range");
    CHECK(whole_number<std::uint64_t>(nlohmann::json(std::int64_t{5}), "x") == 5);  // signed storage, unsigned type
    CHECK(whole_number<std::int64_t>(j("-9223372036854775808"), "x") == INT64_MIN);
    CHECK_THROWS_WITH(whole_number<std::int64_t>(j("9223372036854775808"), "x"), "x is out of range");
    CHECK_THROWS_WITH(whole_number<int>(j("1.0"), "x"), "x must be a whole number");
    CHECK_THROWS_WITH(whole_number<int>(j("\"1\""), "x"), "x must be a whole number");
}

TEST_CASE("a deployment's budget that is no size is an error naming the file and the field, not a crash") {
    // "budget": "0G" reached parse_bytes through the plan's memory notes and escaped as std::invalid_argument.
    CHECK_THROWS_WITH(slabcast::plan_commands(regression("plan-budget-zero"), "p.json", ""),
                      Catch::StartsWith("p.json: ") && Catch::Contains("\"budget\"") && Catch::Contains("'0G'"));
}

TEST_CASE("a deployment's slab_depth beyond any volume is an error naming the file, not a crash") {
    // "slab_depth": 4000000 passed the >= 1 check and escaped slab_count as std::invalid_argument (fuzz_plan).
    CHECK_THROWS_WITH(slabcast::plan_commands(regression("plan-slab-depth-too-deep"), "p.json", ""),
                      Catch::StartsWith("p.json: \"dims\" and \"slab_depth\": ") &&
                          Catch::Contains("slab depth 4000000 must be 1..1048576"));
}

TEST_CASE("quant values at the top of float32's range come back finite and within the bound") {
    // fuzz_run_decode's input: a byte choosing BITS, then float32 values
    // from about -3.2e38 to float32's largest, whose top level lies past it.
    const std::string input = regression("run-decode-quant-top-level-past-float-max");
    REQUIRE(input.size() > 5);
    std::vector<float> values((input.size() - 1) / sizeof(float));
    std::memcpy(values.data(), input.data() + 1, values.size() * sizeof(float));
    const int bits = slabcast::run::kMinQuantBits + static_cast<std::uint8_t>(input[0]) %
                                                        (slabcast::run::kMaxQuantBits - slabcast::run::kMinQuantBits + 1);
    slabcast::run::RunEncoder encoder(slabcast::run::CodecChoice{slabcast::run::Codec::Quant,
                                                                 static_cast<std::uint16_t>(bits)});
    slabcast::run::RunDecoder decoder;
    std::vector<std::uint8_t> packet(slabcast::run::kMaxPacketBytes);
    const slabcast::run::RunEncoder::Packet p =
        encoder.encode(values.data(), static_cast<std::int64_t>(values.size()), {}, packet.data());
    slabcast::run::Header h;
    REQUIRE(slabcast::run::parse_header(packet.data(), p.bytes, h) == slabcast::run::ParseResult::Ok);
    REQUIRE(h.codec == slabcast::run::Codec::Quant);
    const float* back = decoder.decode(h, slabcast::run::payload(packet.data()));
    REQUIRE(back);
    float q = 0;
    std::memcpy(&q, slabcast::run::payload(packet.data()) + 4, 4);
    for (int i = 0; i < h.count; ++i) {
        REQUIRE(std::isfinite(back[i]));
        const double ulp = std::nextafter(std::fabs(back[i]), HUGE_VALF) - std::fabs(back[i]);
        REQUIRE(std::fabs(static_cast<double>(back[i]) - values[static_cast<std::size_t>(i)]) <= 0.5 * q + 0.5 * ulp);
    }
}
