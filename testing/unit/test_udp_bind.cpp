// A role's UDP port is its own: a second bind to it fails, and the kernel never
// hands a port-0 bind a port that a role holds (base/udp.cpp, bind_socket).
#include "base/udp.h"

#include <catch2/catch.hpp>
#include <netinet/in.h>

#include <set>
#include <vector>

using namespace slabcast;

namespace {

int bound_port(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("a second role cannot bind a UDP port that one holds") {
    Socket first(open_udp_socket(AF_INET));
    bind_socket(first.fd(), parse_endpoint("127.0.0.1:0"));
    const int port = bound_port(first.fd());
    Socket second(open_udp_socket(AF_INET));
    REQUIRE_THROWS_WITH(bind_socket(second.fd(), parse_endpoint("127.0.0.1:" + std::to_string(port))),
                        Catch::Contains("cannot bind UDP 127.0.0.1:" + std::to_string(port)) &&
                            Catch::Contains("in use"));
}

TEST_CASE("a port-0 bind never gets a port that a role holds") {
    // 200 held ports, then 2000 port-0 binds on the wildcard address (the
    // controller's --bind 0.0.0.0:0): with SO_REUSEADDR about 1 in 170 landed
    // on a held port, and the shufflers' replies went to the other socket.
    std::vector<Socket> held;
    std::set<int> held_ports;
    for (int i = 0; i < 200; ++i) {
        held.emplace_back(open_udp_socket(AF_INET));
        bind_socket(held.back().fd(), parse_endpoint("127.0.0.1:0"));
        held_ports.insert(bound_port(held.back().fd()));
    }
    int collisions = 0;
    for (int i = 0; i < 2000; ++i) {
        Socket s(open_udp_socket(AF_INET));
        bind_socket(s.fd(), parse_endpoint("0.0.0.0:0"));
        collisions += held_ports.count(bound_port(s.fd())) != 0;
    }
    CHECK(collisions == 0);
}
