// The sending end's payloads sent from the page cache (mover/stream_io.h
// send_file, Channel::send_file), over real socketpairs and a real file in
// /dev/shm: the bytes arrive whole and in step with what is written around
// them, plaintext or sealed; a file that shrank after it was read is sent
// with zeros in place of what it lost, so the stream stays in step; a peer
// that is gone is an error to report, not a SIGPIPE that ends the process.
#include "mover/channel.h"
#include "mover/stream_io.h"
#include "mover_socket_pair.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sodium.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>

using namespace slabcast::mover;

namespace {

// A file in /dev/shm holding `bytes`, removed with the object.
struct ShmFile {
    std::string path = "/dev/shm/slabcast-unit-sendfile-" + std::to_string(::getpid());
    int fd = -1;
    explicit ShmFile(const std::string& bytes) {
        fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    }
    ~ShmFile() {
        ::close(fd);
        ::unlink(path.c_str());
    }
};

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 11) % 26);
    return s;
}

std::string read_exactly(Channel& c, std::size_t n) {
    std::string s(n, '\0');
    REQUIRE(c.read_full(s.data(), n));
    return s;
}

}  // namespace

TEST_CASE("a payload sent from its file arrives whole, between the bytes written around it") {
    const std::string content = pattern(700 * 1024 + 3);
    ShmFile file(content);
    Pair p;
    Channel out(p.a), in(p.b);
    std::thread sender([&] {
        out.write_full("head", 4, true);
        out.send_file(file.fd, 1000, content.size() - 1000);
        out.write_full("tail", 4);
    });
    CHECK(read_exactly(in, 4) == "head");
    CHECK(read_exactly(in, content.size() - 1000) == content.substr(1000));
    CHECK(read_exactly(in, 4) == "tail");
    sender.join();
}

TEST_CASE("a file that shrank after it was read is sent with zeros for what it lost") {
    const std::string content = pattern(300 * 1024);
    ShmFile file(content);
    REQUIRE(::ftruncate(file.fd, 100 * 1024) == 0);
    Pair p;
    Channel out(p.a), in(p.b);
    std::thread sender([&] {
        out.send_file(file.fd, 0, content.size());
        out.write_full("next", 4);
    });
    const std::string got = read_exactly(in, content.size());
    CHECK(got.substr(0, 100 * 1024) == content.substr(0, 100 * 1024));
    CHECK(got.substr(100 * 1024) == std::string(200 * 1024, '\0'));
    CHECK(read_exactly(in, 4) == "next");  // still in step
    sender.join();
}

TEST_CASE("on a sealed channel a payload from a file is read and sealed") {
    REQUIRE(sodium_init() >= 0);
    SessionKeys one;
    one.cipher = Cipher::XChaCha20Poly1305;
    randombytes_buf(one.send.data(), one.send.size());
    randombytes_buf(one.receive.data(), one.receive.size());
    SessionKeys other = one;
    std::swap(other.send, other.receive);
    const std::string content = pattern(3 * kSealedRecord + 17);
    ShmFile file(content);
    Pair p;
    Channel out(p.a, one), in(p.b, other);
    std::thread sender([&] { out.send_file(file.fd, 0, content.size()); });
    CHECK(read_exactly(in, content.size()) == content);
    sender.join();
}

TEST_CASE("sending from a file to a peer that is gone throws, and the process lives on") {
    ShmFile file(pattern(1 << 20));
    Pair p;
    ::close(p.b);
    p.b = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // for ~Pair
    Channel out(p.a);
    CHECK_THROWS_WITH(out.send_file(file.fd, 0, 1 << 20), Catch::Contains("the peer is gone"));
}
