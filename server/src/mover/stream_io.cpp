#include "mover/stream_io.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

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

bool StoppableSockets::add(int fd) {
    std::lock_guard lock(mutex_);
    if (stopped_) return false;
    fds_.insert(fd);
    return true;
}

void StoppableSockets::remove(int fd) {
    std::lock_guard lock(mutex_);
    fds_.erase(fd);
}

void StoppableSockets::stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    for (const int fd : fds_) ::shutdown(fd, SHUT_RDWR);
}

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
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) throw PeerSilent();
        throw std::runtime_error(r == 0 ? "the peer closed the connection in the middle of a frame"
                                        : std::string("receive: ") + std::strerror(errno));
    }
    return true;
}

std::size_t recv_some(int fd, void* buf, std::size_t n) {
    for (;;) {
        const ssize_t r = ::recv(fd, buf, n, 0);
        if (r >= 0) return static_cast<std::size_t>(r);
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) throw PeerSilent();
        throw std::runtime_error(std::string("receive: ") + std::strerror(errno));
    }
}

namespace {

[[noreturn]] void send_failed(ssize_t w) {
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        throw std::runtime_error("send: the peer took nothing for the idle timeout, connection dropped");
    // EPIPE and ECONNRESET are the peer dying or closing, not a local fault: say so in words.
    const int err = w < 0 ? errno : EPIPE;
    const bool lost = err == EPIPE || err == ECONNRESET;
    throw std::runtime_error(std::string("send: ") + (lost ? "the peer is gone, connection lost: " : "") +
                             std::strerror(err));
}

}  // namespace

void write_full(int fd, const void* buf, std::size_t n, bool more) {
    const auto* p = static_cast<const std::uint8_t*>(buf);
    while (n > 0) {
        const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) send_failed(w);
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

void read_or_zeros(int file, std::uint64_t offset, std::uint8_t* buf, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(file, buf + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<std::size_t>(r);
    }
    std::memset(buf + got, 0, n - got);
}

namespace {

// sendfile takes no MSG_NOSIGNAL: while it runs, SIGPIPE is held back in this
// thread, and one it raised (the peer is gone) is taken away before the mask
// is restored, so a lost peer is an error to report, not the end of the process.
class NoSigpipe {
public:
    NoSigpipe() {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    }
    ~NoSigpipe() {
        sigset_t pending;
        if (::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
            const timespec now{};
            ::sigtimedwait(&pipe_, nullptr, &now);
        }
        ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    NoSigpipe(const NoSigpipe&) = delete;
    NoSigpipe& operator=(const NoSigpipe&) = delete;

private:
    sigset_t pipe_{}, old_{};
};

}  // namespace

void send_file(int fd, int file, std::uint64_t offset, std::size_t length) {
    std::size_t sent = 0;
    NoSigpipe guard;
    while (sent < length) {
        off_t at = static_cast<off_t>(offset + sent);
        const ssize_t w = ::sendfile(fd, file, &at, length - sent);
        if (w > 0) {
            sent += static_cast<std::size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno != EINVAL && errno != ENOSYS) send_failed(w);
        break;  // the file ended early, or cannot be spliced: read and sent below
    }
    std::vector<std::uint8_t> buf(std::min<std::size_t>(length - sent, 256u << 10));
    while (sent < length) {
        const std::size_t n = std::min(buf.size(), length - sent);
        read_or_zeros(file, offset + sent, buf.data(), n);
        sent += n;
        write_full(fd, buf.data(), n, sent < length);
    }
}

}  // namespace slabcast::mover
