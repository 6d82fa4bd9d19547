// The receiver's sender allowlist: CIDR parsing (and its errors), matching of
// IPv4, IPv6 and IPv4-mapped IPv6 sources.
#include "base/address_filter.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <stdexcept>

using slabcast::AddressFilter;

namespace {

sockaddr_storage source(const char* text) {
    sockaddr_storage s{};
    auto& v4 = reinterpret_cast<sockaddr_in&>(s);
    auto& v6 = reinterpret_cast<sockaddr_in6&>(s);
    if (::inet_pton(AF_INET, text, &v4.sin_addr) == 1) v4.sin_family = AF_INET;
    else if (::inet_pton(AF_INET6, text, &v6.sin6_addr) == 1) v6.sin6_family = AF_INET6;
    else FAIL("bad test address " << text);
    return s;
}

}  // namespace

TEST_CASE("CIDR blocks match the addresses inside them and nothing else") {
    AddressFilter f;
    f.add_list("10.1.0.0/16,192.168.7.9,fd00:1::/32");
    CHECK(f.allows(source("10.1.255.3")));
    CHECK_FALSE(f.allows(source("10.2.0.1")));
    CHECK(f.allows(source("192.168.7.9")));
    CHECK_FALSE(f.allows(source("192.168.7.10")));
    CHECK(f.allows(source("fd00:1:ffff::5")));
    CHECK_FALSE(f.allows(source("fd00:2::5")));
    CHECK(f.allows(source("::ffff:10.1.2.3")));  // IPv4-mapped, as on a dual-stack socket
    CHECK_FALSE(f.allows(source("::ffff:10.2.2.3")));
}

TEST_CASE("prefixes that are not whole bytes, and the extremes") {
    AddressFilter f;
    f.add("172.16.0.0/12");
    CHECK(f.allows(source("172.31.255.255")));
    CHECK_FALSE(f.allows(source("172.32.0.0")));
    AddressFilter any4;
    any4.add("0.0.0.0/0");
    CHECK(any4.allows(source("8.8.8.8")));
    CHECK_FALSE(any4.allows(source("::1")));  // an IPv4 block says nothing of IPv6
}

TEST_CASE("bad allowlist items name the problem") {
    AddressFilter f;
    CHECK_THROWS_WITH(f.add("10.0.0.300"), Catch::Contains("'10.0.0.300': not an IPv4 or IPv6 address"));
    CHECK_THROWS_WITH(f.add("10.0.0.0/33"), Catch::Contains("prefix must be 0..32"));
    CHECK_THROWS_WITH(f.add("::1/129"), Catch::Contains("prefix must be 0..128"));
    CHECK_THROWS_WITH(f.add("10.0.0.0/x"), Catch::Contains("prefix must be"));
    CHECK_THROWS_WITH(f.add_list("10.0.0.1,,10.0.0.2"), Catch::Contains("empty item"));
    CHECK(f.empty());
}
