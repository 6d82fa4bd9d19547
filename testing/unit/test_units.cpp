// The units module: every rate, byte size and index list a role or a
// deployment file takes is read by these functions, so what they accept and
// refuse here is what every command line accepts and refuses.
#include "slabcast/units.h"

#include <catch2/catch.hpp>

#include <sched.h>

using namespace slabcast;

TEST_CASE("rates") {
    CHECK(parse_rate_bps("2.81G") == Approx(2.81e9));
    CHECK(parse_rate_bps("500M") == Approx(5e8));
    CHECK(parse_rate_bps("10gbit") == Approx(1e10));
    CHECK(parse_rate_bps("1.5Gbps") == Approx(1.5e9));
    CHECK(parse_rate_bps("0") == 0);
    CHECK_THROWS_WITH(parse_rate_bps("fast"), Catch::Contains("rate 'fast'"));
    CHECK_THROWS_WITH(parse_rate_bps("3X"), Catch::Contains("unknown unit"));
    CHECK_THROWS(parse_rate_bps("-1G"));
    CHECK(format_rate(2.81e9) == "2.81 Gbit/s");
    CHECK(format_rate(5e8) == "500.0 Mbit/s");
}

TEST_CASE("byte sizes take binary prefixes in either case, 1 byte to 2^62") {
    CHECK(parse_bytes("4096") == 4096);
    CHECK(parse_bytes("64k") == 64u << 10);
    CHECK(parse_bytes("512M") == 512u << 20);
    CHECK(parse_bytes("8G") == std::uint64_t{8} << 30);
    CHECK(parse_bytes("1.5g") == std::uint64_t{3} << 29);
    CHECK(parse_bytes("2T") == std::uint64_t{2} << 40);
    CHECK_THROWS_WITH(parse_bytes("lots"), "size 'lots': expected e.g. 8G or 512M");
    CHECK_THROWS_WITH(parse_bytes("8GiB"), "size '8GiB': unknown unit 'GiB'");  // as `stage --budget` always took
    CHECK_THROWS_WITH(parse_bytes("0"), "size '0' must be 1 byte to 2^62 bytes");
    CHECK_THROWS_WITH(parse_bytes("-1M"), Catch::Contains("must be 1 byte"));
    CHECK_THROWS_WITH(parse_bytes("1e30T"), Catch::Contains("must be 1 byte"));
    CHECK_THROWS_WITH(parse_bytes("nan"), Catch::Contains("must be 1 byte"));
}

TEST_CASE("byte sizes are printed in binary units with one decimal") {
    CHECK(format_bytes(0) == "0 bytes");
    CHECK(format_bytes(512) == "512 bytes");
    CHECK(format_bytes(1023) == "1023 bytes");
    CHECK(format_bytes(1024) == "1.0 KiB");
    CHECK(format_bytes(3u << 19) == "1.5 MiB");
    CHECK(format_bytes(std::uint64_t{5} << 30) == "5.0 GiB");
    CHECK(format_bytes(UINT64_MAX) == "16.0 EiB");
    CHECK(format_bytes(parse_bytes("1.5g")) == "1.5 GiB");
}

TEST_CASE("whole numbers are all of the text and within their bounds") {
    CHECK(parse_whole("7", 0, 9) == 7);
    CHECK(parse_whole("-3", -5, 5) == -3);
    CHECK_FALSE(parse_whole("3x", 0, 9));
    CHECK_FALSE(parse_whole("", 0, 9));
    CHECK_FALSE(parse_whole("10", 0, 9));
    CHECK_FALSE(parse_whole("99999999999999999999", 0, 9));
}

TEST_CASE("index lists spell out their ranges, each bounded by what they count") {
    CHECK(parse_index_list("0,2,4-7", 100, "x") == std::vector<int>{0, 2, 4, 5, 6, 7});
    CHECK(parse_index_list("3", 3, "x") == std::vector<int>{3});
    CHECK_THROWS_WITH(parse_index_list("0-4", 3, "--cpus"), "--cpus '0-4': bad item '0-4' (numbers 0 to 3, or ranges LO-HI of them)");
    CHECK_THROWS_WITH(parse_index_list("1,x", 3, "--cpus"), Catch::Contains("bad item 'x'"));
    CHECK_THROWS_WITH(parse_index_list("1x", 3, "--cpus"), Catch::Contains("bad item '1x'"));
    CHECK_THROWS_WITH(parse_index_list("5-2", 9, "x"), Catch::Contains("bad item '5-2'"));
    CHECK_THROWS_WITH(parse_index_list("-1", 9, "x"), Catch::Contains("bad item '-1'"));
    CHECK_THROWS_WITH(parse_index_list("", 9, "--streams"), "--streams '' is empty");
    // A stream list is not a CPU list: stream numbers go past CPU_SETSIZE.
    CHECK(parse_index_list("2000-2001", (1 << 20) - 1, "--streams") == std::vector<int>{2000, 2001});
    CHECK_THROWS(parse_index_list("2000", CPU_SETSIZE - 1, "--cpus"));
}

TEST_CASE("index ranges, kept as ranges") {
    const auto r = parse_index_ranges("0-9,12", 100, "--steps");
    REQUIRE(r.size() == 2);
    CHECK((r[0].first == 0 && r[0].last == 9 && r[1].first == 12 && r[1].last == 12));
    const IndexRange ports = parse_index_range("9000-9003", 65535, "ports");
    CHECK((ports.first == 9000 && ports.last == 9003));
    CHECK_THROWS_WITH(parse_index_range("9000-70000", 65535, "ports"),
                      "ports '9000-70000': expected N or LO-HI, numbers 0 to 65535");
    CHECK_THROWS(parse_index_range("1,2", 65535, "ports"));
}
