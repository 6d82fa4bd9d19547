#include "mover/stream_io.h"

#include "mover/channel.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast::mover {

namespace {

addrinfo* resolve(const std::string& host, int port, bool passive) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
    if (rc != 0) throw std::runtime_error(host + ": cannot resolve: " + gai_strerror(rc));
    return found;
}

}  // namespace

void tune_tcp(int fd, int peer_timeout_s) {
    // No SO_SNDBUF/SO_RCVBUF: setting them turns off the kernel's buffer
    // autotuning, which is what lets one stream fill a long, fast path (up to
    // net.ipv4.tcp_rmem's maximum; ESnet's fasterdata advice for such hosts).
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Data unacknowledged for the timeout ends the connection, and so does
    // silence: probes start after a quarter of it, three go unanswered.
    const int idle = std::max(1, peer_timeout_s / 4), interval = std::max(1, peer_timeout_s / 12), probes = 3;
    const unsigned user_timeout_ms = static_cast<unsigned>(peer_timeout_s) * 1000u;
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

UniqueFd connect_tcp(const std::string& host, int port, int peer_timeout_s) {
    addrinfo* found = resolve(host, port, false);
    int err = 0;
    for (addrinfo* a = found; a; a = a->ai_next) {
        UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        if (!fd.valid()) continue;
        if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
            ::freeaddrinfo(found);
            tune_tcp(fd.get(), peer_timeout_s);
            return fd;
        }
        err = errno;
    }
    ::freeaddrinfo(found);
    throw std::runtime_error("cannot connect to " + host + ":" + std::to_string(port) + ": " + std::strerror(err));
}

UniqueFd listen_tcp(const std::string& address, int port) {
    addrinfo* found = resolve(address, port, true);
    UniqueFd fd(::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol));
    const int one = 1;
    if (fd.valid()) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (!fd.valid() || ::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0 ||
        ::listen(fd.get(), SOMAXCONN) != 0) {
        const int err = errno;
        ::freeaddrinfo(found);
        throw std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + ": " + std::strerror(err));
    }
    ::freeaddrinfo(found);
    return fd;
}

bool read_full(int fd, void* buf, std::size_t n) {
    auto* p = static_cast<std::uint8_t*>(buf);
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::recv(fd, p + got, n - got, 0);
        if (r > 0) {
            got += static_cast<std::size_t>(r);
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r == 0 && got == 0) return false;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            throw std::runtime_error("the peer sent nothing for the idle timeout, connection dropped");
        throw std::runtime_error(r == 0 ? "the peer closed the connection in the middle of a frame"
                                        : std::string("receive: ") + std::strerror(errno));
    }
    return true;
}

void write_full(int fd, const void* buf, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(buf);
    while (n > 0) {
        const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            throw std::runtime_error("send: the peer took nothing for the idle timeout, connection dropped");
        if (w <= 0) {
            // EPIPE and ECONNRESET are the peer dying or closing, not a local fault: say so in words.
            const int err = w < 0 ? errno : EPIPE;
            const bool lost = err == EPIPE || err == ECONNRESET;
            throw std::runtime_error(std::string("send: ") + (lost ? "the peer is gone, connection lost: " : "") +
                                     std::strerror(err));
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

bool read_frame(int fd, Frame& f, std::string& payload, std::size_t max_payload) {
    Channel plain(fd);
    return read_frame(plain, f, payload, max_payload);
}

void write_frame(int fd, const Frame& f, const void* payload, std::size_t length) {
    Channel plain(fd);
    write_frame(plain, f, payload, length);
}

}  // namespace slabcast::mover
