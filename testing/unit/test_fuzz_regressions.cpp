// Inputs the fuzzers (testing/fuzz/) once crashed on, kept as plain tests so a
// normal build catches a regression. Each must now fail with a clear error.
#include "slabcast/descriptor.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

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
