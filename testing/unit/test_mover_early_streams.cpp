// A move's streams opened while its sources are scanned (mover/early_streams.h),
// against a listener on loopback that plays the server's first frame: stream
// 0 reaches the server first; a connection is used while its Hello can still
// come in time, and left when its Challenge is older than half the wait the
// server named; a server that never sends its Challenge holds nothing once
// the transfer stops; a port nobody listens on is named, as a connect now would.
#include "mover/channel.h"
#include "mover/auth.h"
#include "mover/early_streams.h"
#include "mover/stream_io.h"

#include <catch2/catch.hpp>

#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

using namespace slabcast::mover;
using slabcast::UniqueFd;

namespace {

struct Listener {
    UniqueFd fd = listen_tcp("127.0.0.1", 0);
    int port() const {
        sockaddr_in a{};
        socklen_t n = sizeof a;
        REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &n) == 0);
        return ntohs(a.sin_port);
    }
    UniqueFd accept() const { return UniqueFd(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC)); }
};

// This process's end of the connection whose server end is `server`: the
// descriptor an EarlyStreams thread holds (its local address is the
// server end's peer).
int client_end(int server) {
    sockaddr_in peer{};
    socklen_t n = sizeof peer;
    REQUIRE(::getpeername(server, reinterpret_cast<sockaddr*>(&peer), &n) == 0);
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
        const int fd = std::stoi(e.path().filename().string());
        sockaddr_in local{};
        socklen_t m = sizeof local;
        if (fd != server && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &m) == 0 &&
            local.sin_family == AF_INET && local.sin_port == peer.sin_port && local.sin_addr.s_addr == peer.sin_addr.s_addr)
            return fd;
    }
    FAIL("no descriptor of this process is the client end of the connection");
    return -1;
}

// Until the client has read all the server end sent: acknowledged (in its
// socket), then taken off its socket. An event, where a sleep would only
// guess how late a thread runs on a busy machine.
void wait_read(int server) {
    const int client = client_end(server);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int unacked = 1, unread = 1;
    while (std::chrono::steady_clock::now() < deadline) {
        REQUIRE(::ioctl(server, SIOCOUTQ, &unacked) == 0);
        REQUIRE(::ioctl(client, SIOCINQ, &unread) == 0);
        if (unacked == 0 && unread == 0) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    FAIL("in 30 s the client did not read what the server sent: " << unacked << " bytes unacknowledged, " << unread
                                                                    << " unread");
}

// The server's first frame, naming how long it waits for the Hello.
void challenge(int fd, std::uint64_t hello_wait_ms, std::uint8_t first_nonce_byte = 1) {
    std::uint8_t nonce[kNonceBytes] = {first_nonce_byte};
    Frame f{Kind::Challenge};
    f.offset = hello_wait_ms;
    write_frame(fd, f, nonce, sizeof nonce);
}

}  // namespace

TEST_CASE("early streams: stream 0 connects first, and each is taken once with its Challenge") {
    Listener l;
    EarlyStreams early("127.0.0.1", l.port(), 3, 30);
    // Waits of 60 s: taken within half of that however slowly the threads run.
    UniqueFd first = l.accept();  // stream 0: the others connect only once it has
    challenge(first.get(), 60'000, 0xa0);
    UniqueFd second = l.accept(), third = l.accept();  // streams 1 and 2, in either order
    challenge(second.get(), 60'000, 0xb0);
    challenge(third.get(), 60'000, 0xb0);
    std::optional<EarlyStream> zero = early.take(0), one = early.take(1), two = early.take(2);
    REQUIRE(zero);
    REQUIRE(one);
    REQUIRE(two);
    CHECK(zero->challenge.nonce[0] == 0xa0);  // the first connection the server met
    CHECK(one->challenge.nonce[0] == 0xb0);
    CHECK(two->challenge.nonce[0] == 0xb0);
    CHECK(zero->challenge.frame.offset == 60'000);
    CHECK_FALSE(early.take(0));  // taken already
    CHECK_FALSE(early.take(3));  // never opened: the stream connects as it always did
}

TEST_CASE("early streams: a Challenge older than half the server's wait for the Hello is left") {
    Listener l;
    EarlyStreams early("127.0.0.1", l.port(), 2, 30);
    UniqueFd zero = l.accept();
    challenge(zero.get(), 100);  // serve --hello-timeout of 0.1 s
    UniqueFd one = l.accept();
    challenge(one.get(), 0);  // no limit
    wait_read(zero.get());  // its age counts from when stream 0's thread read it
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a scan longer than half of it
    CHECK_FALSE(early.take(0));
    CHECK(early.take(1));
}

TEST_CASE("early streams: stop() ends the wait for a Challenge that never comes; a closed port is named") {
    Listener l;
    EarlyStreams early("127.0.0.1", l.port(), 2, 30);
    UniqueFd silent = l.accept();  // accepted, and never a Challenge
    // Stream 1 connects only once stream 0's thread is connected and waiting
    // for its Challenge (stoppable): an event, not a guess at how long it takes.
    UniqueFd next = l.accept();
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        early.stop();
    });
    // Shut down, not "no challenge from the server within 30 s" (the peer timeout).
    CHECK_THROWS_WITH(early.take(0), Catch::Contains("closed the connection before its challenge"));
    stopper.join();

    const int closed_port = l.port();
    l.fd.reset();  // nobody listens there now
    EarlyStreams refused("127.0.0.1", closed_port, 2, 5);
    CHECK_THROWS_WITH(refused.take(0), Catch::Contains("Connection refused"));
    CHECK_THROWS_WITH(refused.take(1), Catch::Contains("Connection refused"));  // each finds out for itself
}
