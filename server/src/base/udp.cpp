#include "base/udp.h"

#include "slabcast/units.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/udp.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast {

Endpoint parse_endpoint(const std::string& text) {
    std::string host, port;
    if (!text.empty() && text[0] == '[') {
        const auto close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
            throw std::invalid_argument("address '" + text + "': expected [IPv6]:PORT");
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos) throw std::invalid_argument("address '" + text + "': expected HOST:PORT");
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (host.empty()) host = "0.0.0.0";
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 0 || p > 65535)
        throw std::invalid_argument("address '" + text + "': port must be 0..65535");

    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0 || !found)
        throw std::invalid_argument("address '" + text + "': cannot resolve host: " + gai_strerror(rc));
    Endpoint e;
    std::memcpy(&e.addr, found->ai_addr, found->ai_addrlen);
    e.length = found->ai_addrlen;
    e.text = text;
    ::freeaddrinfo(found);
    return e;
}

Endpoint with_port(const Endpoint& e, int port) {
    Endpoint out = e;
    if (e.addr.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(out.addr).sin6_port = htons(port);
    else reinterpret_cast<sockaddr_in&>(out.addr).sin_port = htons(port);
    out.text = to_string(out.addr);
    return out;
}

std::string address_only(const sockaddr_storage& addr) {
    char host[INET6_ADDRSTRLEN] = "";
    if (addr.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, host, sizeof host);
    else
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, host, sizeof host);
    return host;
}

std::string to_string(const sockaddr_storage& addr) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (addr.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
        ::inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof host);
        return std::string("[") + host + "]:" + std::to_string(ntohs(a.sin6_port));
    }
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
    port = ntohs(a.sin_port);
    return std::string(host) + ":" + std::to_string(port);
}

int open_udp_socket(int family) {
    const int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("cannot open UDP socket: ") + std::strerror(errno));
    return fd;
}

// No SO_REUSEADDR: on UDP it lets a second socket bind a port already held,
// silently taking its datagrams, and lets the kernel hand a port-0 bind (the
// controller's) a port another role holds, so that replies go astray. UDP has
// no TIME_WAIT: a restarted role rebinds its port without it.
void bind_socket(int fd, const Endpoint& bind_to) {
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&bind_to.addr), bind_to.length) != 0)
        throw std::runtime_error("cannot bind UDP " + bind_to.text + ": " + std::strerror(errno));
}

int raise_buffer(int fd, bool receive, int bytes, const std::string& role) {
    const int opt = receive ? SO_RCVBUF : SO_SNDBUF;
    const int force = receive ? SO_RCVBUFFORCE : SO_SNDBUFFORCE;
    // FORCE passes the rmem_max/wmem_max limits when we have CAP_NET_ADMIN; else fall back.
    if (::setsockopt(fd, SOL_SOCKET, force, &bytes, sizeof bytes) != 0)
        ::setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
    int granted = 0;
    socklen_t len = sizeof granted;
    ::getsockopt(fd, SOL_SOCKET, opt, &granted, &len);
    // The kernel reports twice the usable size it booked.
    if (granted / 2 < bytes) {
        const char* knob = receive ? "net.core.rmem_max" : "net.core.wmem_max";
        spdlog::warn("{}: kernel clamped {} to {} bytes (asked {}); as root run: sysctl -w {}={}", role,
                     receive ? "SO_RCVBUF" : "SO_SNDBUF", granted / 2, bytes, knob, bytes);
    }
    return granted;
}

bool enable_gso(int fd, int segment_bytes) {
    return ::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &segment_bytes, sizeof segment_bytes) == 0;
}

bool enable_gro(int fd) {
    const int one = 1;
    return ::setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
}

void set_receive_timeout(int fd, int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

std::vector<std::string> expand_port_ranges(const std::vector<std::string>& texts) {
    std::vector<std::string> out;
    for (const auto& t : texts) {
        const auto colon = t.rfind(':');
        const auto dash = t.find('-', colon == std::string::npos ? 0 : colon);
        if (colon == std::string::npos || dash == std::string::npos) {
            out.push_back(t);
            continue;
        }
        const IndexRange ports = parse_index_range(t.substr(colon + 1), 65535, "address '" + t + "': ports");
        if (ports.last - ports.first > 4096) throw std::invalid_argument("address '" + t + "': bad port range");
        for (int p = ports.first; p <= ports.last; ++p) out.push_back(t.substr(0, colon + 1) + std::to_string(p));
    }
    return out;
}

}  // namespace slabcast
