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

TEST_CASE("numbers that do not fit the field are errors naming the field, not undefined casts") {
    // slab_depth 1.6e31 was cast from double to int (undefined behaviour, UBSan aborted).
    CHECK_THROWS_WITH(slabcast::parse_descriptor(regression("descriptor-float-to-int"), "z.slabcast"),
                      Catch::Contains("z.slabcast: field 'slab_depth' must be a whole number"));
    const std::string base = R"({"format": "slabcast", "version": 1, "name": "c", "field": "density",
        "ghost_planes": 1, "origin": [0, 0, 0], "spacing": [1, 1, 1], "slabs": [], )";
    CHECK_THROWS_WITH(slabcast::parse_descriptor(base + R"("dims": [8, 8, 8], "slab_depth": 4294967300})", "w"),
                      Catch::Contains("field 'slab_depth' is out of range"));
    CHECK_THROWS_WITH(slabcast::parse_descriptor(base + R"("dims": [8, 8.5, 8], "slab_depth": 4})", "w"),
                      Catch::Contains("field 'dims' must be a whole number"));
    CHECK(slabcast::parse_descriptor(base + R"("dims": [8, 8, 8], "slab_depth": 4})", "w").slab_depth == 4);
}

