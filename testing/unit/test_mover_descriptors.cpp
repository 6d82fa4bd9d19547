// Descriptors across the data mover's abort paths: when a transfer stops
// (ReceiveTransfer::abort, a sender that fails), no end closes or shuts down a
// descriptor it has already handed back. A number closed once may belong to
// an unrelated connection a moment later; closing or shutting it down again
// would cut that connection. Each test opens unrelated descriptors after the
// failure, on the numbers just freed, and checks that they still work once
// every transfer object is gone, and that no descriptor is left behind.
#include "mover/channel.h"
#include "mover/auth.h"
#include "mover/hello.h"
#include "mover/manifest.h"
#include "mover/receive_transfer.h"
#include "mover/send_transfer.h"
#include "mover/stream_io.h"
#include "temp_shm_dir.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace slabcast::mover;
using slabcast::UniqueFd;
using nlohmann::json;

namespace {

constexpr std::uint64_t kId = 0xfd5;

int open_fds() {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += !e.path().empty();
    return n;
}

// A connection of its own, unrelated to any transfer: it works as long as
// nobody else closes or shuts down its descriptors.
struct Unrelated {
    int ends[2] = {-1, -1};
    Unrelated() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0); }
    // Puts it on descriptor `number` (closing whatever is there: none should be).
    void move_to(int number) {
        if (ends[1] == number) std::swap(ends[0], ends[1]);  // it took the number by itself
        if (ends[0] == number) return;
        REQUIRE(::dup2(ends[0], number) == number);
        ::close(ends[0]);
        ends[0] = number;
    }
    bool works() const {
        const char out = 'u';
        char in = 0;
        return ::send(ends[0], &out, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1 &&
               ::recv(ends[1], &in, 1, MSG_DONTWAIT) == 1 && in == out &&
               ::send(ends[1], &out, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1 &&
               ::recv(ends[0], &in, 1, MSG_DONTWAIT) == 1;
    }
    ~Unrelated() {
        ::close(ends[0]);
        ::close(ends[1]);
    }
};

std::string frame(Kind kind, std::uint32_t file = 0, std::uint64_t offset = 0, std::uint64_t extra = 0,
                  const std::string& payload = "") {
    Frame f{kind, kId, file, static_cast<std::uint32_t>(payload.size()), offset,
            checksum(payload.data(), payload.size()), extra};
    std::string bytes(kHeaderBytes, '\0');
    encode_header(f, reinterpret_cast<std::uint8_t*>(bytes.data()));
    return bytes + payload;
}

// A receiving end on loopback as serve runs one: a real ReceiveTransfer
// behind a listener, each connection sent its Challenge, its Hello read and
// checked, then carried by the transfer, and closed once its stream ended.
// `hold`: streams other than 0 wait after their Hello until release(), so
// that the transfer cannot end (their blocks stay on the sockets) however
// fast it runs and however late the test looks.
class Receiver {
public:
    Receiver(const std::string& root, ReceiveLimits limits = {}, bool hold = false)
        : t(kId, root, "", ReceiveSettings{2, 16u << 20, false, "unit", limits, 1}),
          listener_(listen_tcp("127.0.0.1", 0)), held_(hold) {
        sockaddr_in a{};
        socklen_t len = sizeof a;
        REQUIRE(::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    void release() {
        std::lock_guard lock(hold_mutex_);
        held_ = false;
        released_.notify_all();
    }
    // Everything joined and closed, as serve's threads end.
    void stop() {
        release();
        if (!acceptor_.joinable()) return;
        stop_ = true;
        acceptor_.join();
        std::lock_guard lock(mutex_);
        for (auto& s : streams_) s.join();
        streams_.clear();
        listener_ = UniqueFd();
    }
    ~Receiver() {
        t.abort("the test is over");
        stop();
    }

    ReceiveTransfer t;
    int port = 0;

private:
    void accept_loop() {
        while (!stop_) {
            pollfd p{listener_.get(), POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            std::lock_guard lock(mutex_);
            streams_.emplace_back([this, fd] { serve(fd); });
        }
    }
    void serve(int fd) {
        try {
            ServerHandshake handshake(std::nullopt);
            handshake.send_challenge(fd);
            Frame f;
            std::string payload;
            if (read_frame(fd, f, payload, kMaxHelloBytes)) {
                const Hello hello = parse_hello(f.transfer, handshake.accept_hello(fd, f, payload));
                Channel c = handshake.channel(fd);
                if (hello.stream == 0) {
                    t.run_first_stream(c);
                } else {
                    {
                        std::unique_lock lock(hold_mutex_);
                        released_.wait(lock, [this] { return !held_; });
                    }
                    t.run_stream(c);
                }
            }
        } catch (const std::exception&) {  // a stream refused: closed like any other
        }
        // As serve: let the peer read what was said last, then close, once.
        ::shutdown(fd, SHUT_WR);
        const timeval second{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
        char scratch[4096];
        for (int i = 0; i < 4096 && ::recv(fd, scratch, sizeof scratch, 0) > 0; ++i) {
        }
        ::close(fd);
    }

    UniqueFd listener_;
    std::thread acceptor_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<std::thread> streams_;
    std::mutex hold_mutex_;
    std::condition_variable released_;
    bool held_;
};

SendSettings sending_to(const Receiver& r) {
    SendSettings s;
    s.host = "127.0.0.1";
    s.port = r.port;
    s.streams = 3;
    s.readers = 2;
    s.ring_bytes = 16u << 20;
    s.peer_timeout_s = 10;
    s.transfer_id = kId;
    return s;
}

std::string random_bytes(std::size_t n) {
    std::string s(n, '\0');
    std::mt19937_64 rng(7);
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
        const std::uint64_t v = rng();
        std::memcpy(s.data() + i, &v, 8);
    }
    return s;
}

}  // namespace

TEST_CASE("abort() shuts down only the streams still running, never a descriptor already handed back") {
    TempShmDir dir;
    const int before = open_fds();
    int first[2], second[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, first) == 0);
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, second) == 0);
    const timeval wait{20, 0};
    ::setsockopt(first[0], SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    int number = -1;  // the descriptor the second stream had
    {
        auto t = std::make_unique<ReceiveTransfer>(kId, dir.path, "", ReceiveSettings{2, 16u << 20, false, "unit", {}, 1});
        std::thread stream0([&] { t->run_first_stream(first[1]); });
        const std::string text =
            json{{"block", 4096}, {"dirs", json::array()},
                 {"files", json::array({{{"path", "a"}, {"size", 8192}, {"mode", 0644}, {"mtime_ns", 0}}})}}
                .dump();
        const std::string manifest = frame(Kind::Manifest, 0, 0, text.size(), text);
        write_full(first[0], manifest.data(), manifest.size());
        Frame f;
        std::string payload;
        REQUIRE(read_frame(first[0], f, payload));
        REQUIRE(f.kind == Kind::Have);

        // A second stream carries a block and says Bye; its end is closed, as serve does.
        const std::string bytes = frame(Kind::Data, 0, 0, 0, std::string(4096, 'b')) + frame(Kind::Bye);
        write_full(second[0], bytes.data(), bytes.size());
        t->run_stream(second[1]);
        number = second[1];
        ::close(second[1]);
        ::close(second[0]);

        // The number is someone else's now; then the transfer is stopped.
        Unrelated other;
        other.move_to(number);
        REQUIRE(other.works());
        t->abort("stopped by the test");
        CHECK(other.works());  // abort() shut down stream 0 only
        REQUIRE(read_frame(first[0], f, payload));
        CHECK(f.kind == Kind::Error);
        CHECK(payload == "stopped by the test");
        stream0.join();
        ::close(first[1]);
        ::close(first[0]);
        CHECK(other.works());
        t.reset();  // the transfer's own descriptors (part file, journal, directories) go with it
        CHECK(other.works());
    }
    CHECK(open_fds() == before);
}

TEST_CASE("a sender refused after its manifest, or stopped mid-transfer, closes each of its descriptors once") {
    TempShmDir src, dest;
    const std::string data = random_bytes(64u << 20);
    {
        std::ofstream(src.file("big.bin"), std::ios::binary) << data;
    }
    const int before = open_fds();
    for (const bool refused : {true, false}) {
        INFO((refused ? "refused after the manifest" : "stopped mid-transfer"));
        ReceiveLimits limits;
        if (refused) limits.blocks = 3;  // 64 blocks of 1 MiB: refused
        // Stopped mid-transfer: streams 1 and 2 held, so only stream 0's blocks
        // are written and the transfer cannot end before the abort.
        auto receiver = std::make_unique<Receiver>(dest.path, limits, !refused);
        auto sender = std::make_unique<SendTransfer>(scan_sources({src.file("big.bin")}, 1u << 20), sending_to(*receiver));
        std::string failure;
        if (refused) {
            try {
                sender->start();
            } catch (const std::exception& e) {
                failure = e.what();
            }
            CHECK_THAT(failure, Catch::Contains("above the limit of 3 (serve --max-blocks)"));
        } else {
            sender->start();
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            while (receiver->t.bytes_written() == 0 && !receiver->t.finished() &&
                   std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            const bool began = receiver->t.bytes_written() > 0, ended = receiver->t.finished();
            INFO("after 60 s at most: " << receiver->t.bytes_written() << " bytes written, finished " << ended
                                        << " (" << receiver->t.problem() << ")");
            receiver->t.abort("stopped by the test");
            receiver->release();  // before any check: the sender's held streams wait for it
            CHECK(began);
            CHECK_FALSE(ended);
            try {
                sender->finish();
            } catch (const std::exception& e) {
                failure = e.what();
            }
            CHECK_THAT(failure, Catch::Contains("stopped by the test"));
        }
        receiver->stop();  // every stream the receiving end had is closed now
        // Unrelated connections take the numbers the sender's streams gave back.
        std::vector<std::unique_ptr<Unrelated>> others;
        for (int i = 0; i < 8; ++i) others.push_back(std::make_unique<Unrelated>());
        sender.reset();
        receiver.reset();
        for (const auto& o : others) CHECK(o->works());
        CHECK(open_fds() == before + 16);
    }
    CHECK(open_fds() == before);
}
