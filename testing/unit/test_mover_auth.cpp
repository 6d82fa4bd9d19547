// The data mover's handshake (mover/auth.h), both ends over a real socketpair:
// the right key, a wrong one, none, a Hello replayed on a new connection or
// changed on its way, a server without the key, a proof that is not the key's.
#include "mover/channel.h"
#include "mover/auth.h"
#include "mover/stream_io.h"

#include "mover_socket_pair.h"

#include <catch2/catch.hpp>

#include <sodium.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>

using namespace slabcast::mover;

namespace {

Key random_key() {
    REQUIRE(sodium_init() >= 0);
    Key k;
    randombytes_buf(k.bytes.data(), k.bytes.size());
    return k;
}

// Two ends of a connection: `server` and `client`.
struct Connection : Pair {
    const int server = a, client = b;
};

const std::string kJson = R"({"stream":0,"dest":"d"})";

// The Hello as the server reads it off its end.
void read_hello(int fd, Frame& f, std::string& payload) {
    REQUIRE(read_frame(fd, f, payload, 64 << 10));
    REQUIRE(f.kind == Kind::Hello);
}

// What serve does with a refusal: the message goes back as an Error frame.
std::string refused(ServerHandshake& server, int fd, const Frame& f, const std::string& payload) {
    try {
        server.accept_hello(fd, f, payload);
    } catch (const AuthError& e) {
        write_frame(fd, Frame{Kind::Error}, e.what(), std::strlen(e.what()));
        return e.what();
    }
    FAIL("the Hello was accepted");
    return "";
}

std::string message_of(const std::function<void()>& run) {
    try {
        run();
    } catch (const AuthError& e) {
        return e.what();
    }
    FAIL("no AuthError");
    return "";
}

}  // namespace

TEST_CASE("with the same key both ends prove it, and the Hello's JSON comes through") {
    const Key key = random_key();
    Connection c;
    ServerHandshake server(key);
    ClientHandshake client(key);
    server.send_challenge(c.server);
    client.send_hello(c.client, 42, kJson, 2);
    Frame f;
    std::string payload;
    read_hello(c.server, f, payload);
    CHECK(f.transfer == 42);
    CHECK(f.extra == kHasKey);
    CHECK(server.accept_hello(c.server, f, payload) == kJson);
    client.expect_proof(c.client, 2);  // throws if the proof were wrong
}

TEST_CASE("without keys at either end the Hello passes and no proof is sent") {
    Connection c;
    ServerHandshake server(std::nullopt);
    ClientHandshake client(std::nullopt);
    server.send_challenge(c.server);
    client.send_hello(c.client, 7, kJson, 2);
    Frame f;
    std::string payload;
    read_hello(c.server, f, payload);
    CHECK(server.accept_hello(c.server, f, payload) == kJson);
    client.expect_proof(c.client, 2);
    // Nothing was sent back: the next frame on the client's end is this one.
    write_frame(c.server, Frame{Kind::Have, 7});
    REQUIRE(read_frame(c.client, f, payload));
    CHECK(f.kind == Kind::Have);
}

TEST_CASE("a client with another key is refused, and is told so") {
    Connection c;
    ServerHandshake server(random_key());
    ClientHandshake client(random_key());
    server.send_challenge(c.server);
    client.send_hello(c.client, 1, kJson, 2);
    Frame f;
    std::string payload;
    read_hello(c.server, f, payload);
    CHECK(refused(server, c.server, f, payload).find("hold different keys") != std::string::npos);
    const std::string told = message_of([&] { client.expect_proof(c.client, 2); });
    CHECK(told.find("authentication failed: the server and this client hold different keys") != std::string::npos);
}

TEST_CASE("a client without a key is refused by a server that has one, and both say why") {
    Connection c;
    ServerHandshake server(random_key());
    ClientHandshake client(std::nullopt);
    server.send_challenge(c.server);
    const std::string told = message_of([&] { client.send_hello(c.client, 1, kJson, 2); });
    CHECK(told.find("the server requires authentication") != std::string::npos);
    CHECK(told.find("--key-file") != std::string::npos);
    Frame f;
    std::string payload;
    read_hello(c.server, f, payload);  // it was sent all the same, so that the server logs the refusal
    CHECK(refused(server, c.server, f, payload).find("the server requires authentication") != std::string::npos);
}

TEST_CASE("a client with a key will not talk to a server without one") {
    Connection c;
    ServerHandshake server(std::nullopt);
    ClientHandshake client(random_key());
    server.send_challenge(c.server);
    const std::string told = message_of([&] { client.send_hello(c.client, 1, kJson, 2); });
    CHECK(told.find("the server holds no key") != std::string::npos);
    ::shutdown(c.client, SHUT_WR);
    Frame f;
    std::string payload;
    CHECK_FALSE(read_frame(c.server, f, payload));  // no Hello went out
}

TEST_CASE("a Hello recorded on one connection is refused on the next") {
    const Key key = random_key();
    Frame f;
    std::string payload;
    {
        Connection first;
        ServerHandshake server(key);
        ClientHandshake client(key);
        server.send_challenge(first.server);
        client.send_hello(first.client, 5, kJson, 2);
        read_hello(first.server, f, payload);
        CHECK(server.accept_hello(first.server, f, payload) == kJson);
    }
    Connection again;  // the same bytes, sent by someone without the key
    ServerHandshake server(key);
    server.send_challenge(again.server);
    CHECK(refused(server, again.server, f, payload).find("hold different keys") != std::string::npos);
}

TEST_CASE("a Hello changed on its way is refused: its JSON, its header, its nonce") {
    const Key key = random_key();
    for (int change = 0; change < 4; ++change) {
        Connection c;
        ServerHandshake server(key);
        ClientHandshake client(key);
        server.send_challenge(c.server);
        client.send_hello(c.client, 5, kJson, 2);
        Frame f;
        std::string payload;
        read_hello(c.server, f, payload);
        if (change == 0) payload.back() ^= 1;                                 // the JSON (its destination, say)
        if (change == 1) f.transfer ^= 1;                                     // joins another transfer
        if (change == 2) payload[3] ^= 1;                                     // the client's nonce
        if (change == 3) payload.insert(kHelloAuthBytes, R"({"stream":1})");  // JSON put in front
        CAPTURE(change);
        CHECK(refused(server, c.server, f, payload).find("hold different keys") != std::string::npos);
    }
}

TEST_CASE("a Hello too short for its nonce and MAC is refused, with or without a key") {
    for (const bool keyed : {false, true}) {
        Connection c;
        ServerHandshake server(keyed ? std::optional<Key>(random_key()) : std::nullopt);
        server.send_challenge(c.server);
        Frame f{Kind::Hello, 1};
        CHECK(refused(server, c.server, f, kJson).find("too short") != std::string::npos);
    }
}

TEST_CASE("a proof that is not the key's is refused by the client") {
    const Key key = random_key();
    for (const bool replayed : {false, true}) {
        // A server without the key answers: random bytes, or the proof a real
        // server gave on an earlier connection.
        std::string proof(kMacBytes, '\0');
        if (replayed) {
            Connection earlier;
            ServerHandshake server(key);
            ClientHandshake client(key);
            server.send_challenge(earlier.server);
            client.send_hello(earlier.client, 3, kJson, 2);
            Frame f;
            std::string payload;
            read_hello(earlier.server, f, payload);
            server.accept_hello(earlier.server, f, payload);
            REQUIRE(read_frame(earlier.client, f, proof));
            REQUIRE(f.kind == Kind::Proof);
        } else {
            randombytes_buf(proof.data(), proof.size());
        }
        Connection c;
        ServerHandshake impostor(key);  // for its challenge: the nonce is all it knows
        ClientHandshake client(key);
        impostor.send_challenge(c.server);
        client.send_hello(c.client, 3, kJson, 2);
        write_frame(c.server, Frame{Kind::Proof, 3}, proof.data(), proof.size());
        CAPTURE(replayed);
        CHECK(message_of([&] { client.expect_proof(c.client, 2); }).find("the server's proof is wrong") !=
              std::string::npos);
    }
}

TEST_CASE("a server that sends no challenge is named after the timeout, not waited on for ever") {
    Connection c;
    ClientHandshake client(std::nullopt);
    const std::string told = message_of([&] { client.send_hello(c.client, 1, kJson, 1); });
    CHECK(told.find("no challenge from the server within 1 s") != std::string::npos);
}

TEST_CASE("loopback addresses are told from the others") {
    CHECK(is_loopback("127.0.0.1"));
    CHECK(is_loopback("127.0.0.2"));
    CHECK(is_loopback("::1"));
    CHECK(is_loopback("localhost"));
    CHECK_FALSE(is_loopback("0.0.0.0"));
    CHECK_FALSE(is_loopback("::"));
    CHECK_FALSE(is_loopback(""));
    CHECK_FALSE(is_loopback("10.1.2.3"));
    CHECK_FALSE(is_loopback("no-such-host.invalid"));
}
