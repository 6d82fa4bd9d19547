// json_file::field and field_or: the one typed field reader of every JSON
// slabcast reads (descriptor, dataset, deployment plan, mover messages).
#include "slabcast/json_file.h"

#include <catch2/catch.hpp>

using namespace slabcast;
using json_file::field;
using json_file::field_or;

TEST_CASE("fields are read with their type checked, errors naming the file and the field") {
    const auto j = nlohmann::json::parse(R"({"n": 3, "x": 2.5, "on": true, "s": "a", "v": [1, 2], "neg": -1})");
    CHECK(field<int>(j, "n", "f.json") == 3);
    CHECK(field<double>(j, "x", "f.json") == 2.5);
    CHECK(field<double>(j, "n", "f.json") == 3.0);
    CHECK(field<bool>(j, "on", "f.json"));
    CHECK(field<std::string>(j, "s", "f.json") == "a");
    CHECK(field<std::vector<std::int64_t>>(j, "v", "f.json") == std::vector<std::int64_t>{1, 2});
    CHECK_THROWS_WITH(field<int>(j, "missing", "f.json: senders s1"), "f.json: senders s1: missing field 'missing'");
    CHECK_THROWS_WITH(field<double>(j, "on", "f.json"), "f.json: field 'on' has the wrong type");  // not 1.0
    CHECK_THROWS_WITH(field<bool>(j, "n", "f.json"), "f.json: field 'n' has the wrong type");
    CHECK_THROWS_WITH(field<std::string>(j, "n", "f.json"), "f.json: field 'n' has the wrong type");
    CHECK_THROWS_WITH(field<int>(j, "x", "f.json"), "f.json: field 'x' must be a whole number");
    CHECK_THROWS_WITH(field<unsigned>(j, "neg", "f.json"), "f.json: field 'neg' is out of range");
}

TEST_CASE("an optional field falls back only when it is absent") {
    const auto j = nlohmann::json::parse(R"({"n": 3, "s": 4})");
    CHECK(field_or<int>(j, "n", 7, "f.json") == 3);
    CHECK(field_or<int>(j, "absent", 7, "f.json") == 7);
    CHECK(field_or<int>(nlohmann::json::array(), "n", 7, "f.json") == 7);
    CHECK_THROWS_WITH(field_or<std::string>(j, "s", "x", "f.json"), "f.json: field 's' has the wrong type");
}
