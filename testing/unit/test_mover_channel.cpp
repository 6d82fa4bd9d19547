// The data mover's sealed channel (mover/channel.h) and how the handshake
// agrees on it (mover/auth.h), over real socketpairs: frames arrive whole in
// both directions and with both ciphers; what crosses the socket is not the
// plaintext; a record changed, dropped, repeated, moved or cut is refused;
// a server that requires encryption gets it, and a Challenge changed on its
// way fails the Hello.
#include "mover/auth.h"
#include "mover/channel.h"
#include "mover/stream_io.h"
#include "mover_socket_pair.h"

#include <catch2/catch.hpp>

#include <sodium.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace slabcast::mover;

namespace {

// Both ends' keys for one connection: what one sends the other receives.
std::pair<SessionKeys, SessionKeys> keys_for(Cipher cipher) {
    REQUIRE(sodium_init() >= 0);
    SessionKeys one;
    one.cipher = cipher;
    randombytes_buf(one.send.data(), one.send.size());
    randombytes_buf(one.receive.data(), one.receive.size());
    SessionKeys other = one;
    std::swap(other.send, other.receive);
    return {one, other};
}

std::vector<Cipher> ciphers() {
    // libsodium finds AES-NI in sodium_init(): before it, "unavailable" (a
    // test run first, as in --order rand, would leave AES out unseen).
    REQUIRE(sodium_init() >= 0);
    std::vector<Cipher> c{Cipher::XChaCha20Poly1305};
    if (crypto_aead_aes256gcm_is_available()) c.push_back(Cipher::Aes256Gcm);
    return c;
}

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('A' + (i * 7) % 23);
    return s;
}

// Everything a sealed writer puts on the socket for these frames, as raw bytes.
std::string sealed_bytes(const SessionKeys& keys, const std::vector<std::string>& payloads) {
    Pair p;
    std::string raw;
    std::thread reader([&] {
        char buf[65536];
        ssize_t n;
        while ((n = ::recv(p.b, buf, sizeof buf, 0)) > 0) raw.append(buf, static_cast<std::size_t>(n));
    });
    {
        Channel out(p.a, keys);
        for (const auto& s : payloads) write_frame(out, Frame{Kind::Data, 9}, s.data(), s.size());
    }
    ::shutdown(p.a, SHUT_WR);
    reader.join();
    return raw;
}

// The raw stream cut into its records (4-byte length, then that many bytes).
std::vector<std::string> records_of(const std::string& raw) {
    std::vector<std::string> out;
    for (std::size_t at = 0; at + 4 <= raw.size();) {
        std::uint32_t n = 0;
        for (int i = 0; i < 4; ++i) n |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(raw[at + i])) << (8 * i);
        out.push_back(raw.substr(at, 4 + n));
        at += 4 + n;
    }
    return out;
}

// What a sealed reader makes of `raw`: the payloads it read, or its error.
std::string read_back(const SessionKeys& keys, const std::string& raw, std::vector<std::string>* payloads = nullptr) {
    Pair p;
    std::thread writer([&] {
        try {
            write_full(p.a, raw.data(), raw.size());
        } catch (const std::runtime_error&) {  // the reader gave up first
        }
        ::shutdown(p.a, SHUT_WR);
    });
    Channel in(p.b, keys);
    std::string problem;
    try {
        Frame f;
        std::string payload;
        while (read_frame(in, f, payload)) {
            if (payloads) payloads->push_back(payload);
        }
    } catch (const std::runtime_error& e) {
        problem = e.what();
    }
    ::shutdown(p.b, SHUT_RD);
    writer.join();
    return problem;
}

}  // namespace

TEST_CASE("frames cross a sealed channel whole, both ways, with either cipher") {
    for (const Cipher cipher : ciphers()) {
        CAPTURE(to_string(cipher));
        const auto [client, server] = keys_for(cipher);
        Pair p;
        Channel c(p.a, client), s(p.b, server);
        CHECK(c.cipher() == cipher);
        const std::string big = pattern(3 * kSealedRecord + 5), small = "hello";
        std::thread sender([&] {
            write_frame(c, Frame{Kind::Data, 1, 2, 0, 4096}, big.data(), big.size());
            write_frame(c, Frame{Kind::Bye, 1});
            write_frame(c, Frame{Kind::Data, 1}, small.data(), small.size());
        });
        Frame f;
        std::string payload;
        REQUIRE(read_frame(s, f, payload));
        CHECK(f.kind == Kind::Data);
        CHECK(f.file == 2);
        CHECK(f.offset == 4096);
        CHECK(payload == big);
        REQUIRE(read_frame(s, f, payload));
        CHECK(f.kind == Kind::Bye);
        CHECK(payload.empty());
        sender.join();
        CHECK(s.waiting() >= kHeaderBytes);  // the last frame is there to read
        REQUIRE(read_frame(s, f, payload));
        CHECK(payload == small);
        write_frame(s, Frame{Kind::Report, 1}, "ok", 2);  // and back
        REQUIRE(read_frame(c, f, payload));
        CHECK(f.kind == Kind::Report);
        CHECK(payload == "ok");
        ::shutdown(p.a, SHUT_WR);
        CHECK_FALSE(read_frame(s, f, payload));  // an orderly end between records
    }
}

TEST_CASE("what crosses the socket is not the plaintext, and costs 20 bytes a record") {
    const auto [client, server] = keys_for(ciphers().back());
    const std::string secret = pattern(kSealedRecord + 1000);
    const std::string raw = sealed_bytes(client, {secret});
    CHECK(raw.find(secret.substr(0, 64)) == std::string::npos);
    CHECK(raw.find(secret.substr(kSealedRecord, 64)) == std::string::npos);
    // The frame's header is a record of its own (write_frame sends a large
    // payload apart from it), then the payload's records.
    const std::size_t records = 1 + (secret.size() + kSealedRecord - 1) / kSealedRecord;
    CHECK(raw.size() == kHeaderBytes + secret.size() + 20 * records);
    std::vector<std::string> payloads;
    CHECK(read_back(server, raw, &payloads).empty());
    REQUIRE(payloads.size() == 1);
    CHECK(payloads[0] == secret);
}

TEST_CASE("a sealed record changed, dropped, repeated, moved or cut on its way is refused") {
    for (const Cipher cipher : ciphers()) {
        CAPTURE(to_string(cipher));
        const auto [client, server] = keys_for(cipher);
        const std::vector<std::string> frames{pattern(100), pattern(200), pattern(300)};
        const std::string raw = sealed_bytes(client, frames);
        const auto records = records_of(raw);
        REQUIRE(records.size() == 3);  // a small frame is one record
        auto join = [](std::vector<std::string> r) {
            std::string s;
            for (const auto& x : r) s += x;
            return s;
        };
        const std::string refused = "failed its check";
        std::string flipped = raw;
        flipped[records[0].size() + 30] ^= 0x01;  // one bit of the second record
        CHECK_THAT(read_back(server, flipped), Catch::Contains(refused));
        CHECK_THAT(read_back(server, join({records[0], records[2]})), Catch::Contains(refused));  // dropped
        CHECK_THAT(read_back(server, join({records[0], records[0]})), Catch::Contains(refused));  // repeated
        CHECK_THAT(read_back(server, join({records[1], records[0]})), Catch::Contains(refused));  // moved
        CHECK_THAT(read_back(server, raw.substr(0, raw.size() - 5)), Catch::Contains("closed the connection in the middle"));
        std::string huge = raw;
        huge[3] = '\x7f';  // a length no record has
        CHECK_THAT(read_back(server, huge), Catch::Contains("out of step"));
        const auto [other, other_server] = keys_for(cipher);
        CHECK_THAT(read_back(other_server, raw), Catch::Contains(refused));  // another connection's keys
        std::vector<std::string> payloads;
        CHECK(read_back(server, raw, &payloads).empty());  // and untouched, all three arrive
        CHECK(payloads == frames);
    }
}

TEST_CASE("the handshake agrees on encryption: asked by the client, or required by the server") {
    REQUIRE(sodium_init() >= 0);
    Key key;
    randombytes_buf(key.bytes.data(), key.bytes.size());
    const Cipher expected = crypto_aead_aes256gcm_is_available() ? Cipher::Aes256Gcm : Cipher::XChaCha20Poly1305;
    for (const bool required : {false, true}) {
        CAPTURE(required);
        Pair p;
        ServerHandshake server(key, required);
        ClientHandshake client(key, !required);  // when required, a client that did not ask follows
        server.send_challenge(p.b);
        client.send_hello(p.a, 4, "{}", 2);
        CHECK(client.cipher() == expected);
        Frame f;
        std::string payload;
        REQUIRE(read_frame(p.b, f, payload));
        CHECK(server.accept_hello(p.b, f, payload) == "{}");
        client.expect_proof(p.a, 2);
        Channel c = client.channel(p.a), s = server.channel(p.b);
        write_frame(c, Frame{Kind::Manifest, 4}, "sealed", 6);
        REQUIRE(read_frame(s, f, payload));
        CHECK(payload == "sealed");
    }
}

TEST_CASE("a server that requires encryption refuses a Hello without it, and a changed Challenge fails the Hello") {
    REQUIRE(sodium_init() >= 0);
    Key key;
    randombytes_buf(key.bytes.data(), key.bytes.size());
    auto refusal = [](ServerHandshake& server, int fd) {
        Frame f;
        std::string payload;
        REQUIRE(read_frame(fd, f, payload));
        try {
            server.accept_hello(fd, f, payload);
        } catch (const AuthError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    {
        // The Challenge with its requirement struck out on the way: the client
        // does not encrypt, and its MAC (over the Challenge it saw) fails.
        Pair p;
        ServerHandshake server(key, true);
        server.send_challenge(p.b);
        Frame challenge;
        std::string nonce;
        REQUIRE(read_frame(p.a, challenge, nonce));
        CHECK((challenge.extra & kRequiresEncryption) != 0);
        challenge.extra &= ~kRequiresEncryption;
        Pair q;  // the client's side of the path
        write_frame(q.b, challenge, nonce.data(), nonce.size());
        ClientHandshake client(key);
        client.send_hello(q.a, 1, "{}", 2);
        CHECK(client.cipher() == Cipher::None);
        Frame hello;
        std::string payload;
        REQUIRE(read_frame(q.b, hello, payload));
        write_frame(p.a, hello, payload.data(), payload.size());
        CHECK_THAT(refusal(server, p.b), Catch::Contains("hold different keys (or the Hello was changed"));
    }
    {
        // A Challenge that offers no AES: the client chooses XChaCha20-Poly1305.
        Pair p;
        Frame challenge{Kind::Challenge};
        challenge.extra = kRequiresKey;
        const std::string nonce(kNonceBytes, 'n');
        write_frame(p.b, challenge, nonce.data(), nonce.size());
        ClientHandshake client(key, true);
        client.send_hello(p.a, 1, "{}", 2);
        CHECK(client.cipher() == Cipher::XChaCha20Poly1305);
    }
    {
        // A client of its own making that does not ask for encryption.
        Pair p;
        ServerHandshake server(key, true);
        server.send_challenge(p.b);
        Frame challenge;
        std::string nonce;
        REQUIRE(read_frame(p.a, challenge, nonce));
        // Its MAC is right (it holds the key), only the flag is missing: the
        // Hello as a client that ignored the requirement would send it.
        Frame hello{Kind::Hello, 1};
        hello.extra = kHasKey;
        const std::string json = "{}";
        hello.length = static_cast<std::uint32_t>(kHelloAuthBytes + json.size());
        std::uint8_t header[kHeaderBytes];
        encode_header(hello, header);
        std::string client_nonce(kNonceBytes, 'c');
        std::uint8_t flags[8];
        for (int i = 0; i < 8; ++i) flags[i] = static_cast<std::uint8_t>(challenge.extra >> (8 * i));
        const char label[] = "slabcast mover 3 client hello";
        crypto_auth_hmacsha256_state st;
        std::uint8_t mac[kMacBytes];
        crypto_auth_hmacsha256_init(&st, key.bytes.data(), key.bytes.size());
        crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(label), sizeof label);
        crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(nonce.data()), kNonceBytes);
        crypto_auth_hmacsha256_update(&st, flags, sizeof flags);
        crypto_auth_hmacsha256_update(&st, header, sizeof header);
        crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(client_nonce.data()), kNonceBytes);
        crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(json.data()), json.size());
        crypto_auth_hmacsha256_final(&st, mac);
        const std::string payload = client_nonce + std::string(reinterpret_cast<char*>(mac), kMacBytes) + json;
        write_frame(p.a, hello, payload.data(), payload.size());
        CHECK_THAT(refusal(server, p.b), Catch::Contains("this server requires encryption: give the client --encrypt"));
    }
}

TEST_CASE("a sealed record's length and nonce are little-endian numbers, as every number on the wire") {
    // Opened here with libsodium alone: the length as its 4 bytes say it,
    // least significant first, and the nonce of the second record the number 1,
    // least significant byte first, then zeros (docs/mover.md, "Records").
    const auto [client, server] = keys_for(Cipher::XChaCha20Poly1305);
    const std::vector<std::string> frames{pattern(100), pattern(300)};
    const auto records = records_of(sealed_bytes(client, frames));
    REQUIRE(records.size() == 2);
    const std::string& second = records[1];
    const std::size_t n = kHeaderBytes + 300 + 16;
    CHECK(second.substr(0, 4) == std::string{static_cast<char>(n & 0xff), static_cast<char>(n >> 8), 0, 0});
    std::uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES] = {1};
    std::string plain(n - 16, '\0');
    unsigned long long plain_bytes = 0;
    REQUIRE(crypto_aead_xchacha20poly1305_ietf_decrypt(
                reinterpret_cast<unsigned char*>(plain.data()), &plain_bytes, nullptr,
                reinterpret_cast<const unsigned char*>(second.data() + 4), n,
                reinterpret_cast<const unsigned char*>(second.data()), 4, nonce, client.send.data()) == 0);
    const auto* header = reinterpret_cast<const std::uint8_t*>(plain.data());
    const auto f = decode_header(header);
    REQUIRE(f);
    CHECK(f->length == 300);
    CHECK(plain.substr(kHeaderBytes) == frames[1]);
    // And the helpers every such number goes through.
    std::uint8_t bytes[8], *out = bytes;
    put_le<std::uint32_t>(out, 0x01020304u);
    CHECK((bytes[0] == 4 && bytes[1] == 3 && bytes[2] == 2 && bytes[3] == 1));
    CHECK(out == bytes + 4);
    const std::uint8_t* in = bytes;
    CHECK(take_le<std::uint32_t>(in) == 0x01020304u);
    CHECK(in == bytes + 4);
}

TEST_CASE("AES-256-GCM records are libsodium's, both ways: ends built either way agree") {
    // The channel seals AES-256-GCM with OpenSSL (faster); the records must be
    // the bytes libsodium's AES-256-GCM makes and opens, as the wire format
    // says (docs/mover.md, "Records"), so a peer of an older build still agrees.
    // Without AES-NI neither library runs AES-256-GCM: the test cannot run,
    // and says so by failing rather than passing unseen.
    REQUIRE(sodium_init() >= 0);  // which finds AES-NI: whatever test ran before
    if (!crypto_aead_aes256gcm_is_available()) FAIL("cannot run: this CPU has no AES-NI");
    const auto [client, server] = keys_for(Cipher::Aes256Gcm);
    const std::vector<std::string> frames{pattern(100), pattern(kSealedRecord + 777)};
    const auto records = records_of(sealed_bytes(client, frames));
    REQUIRE(records.size() == 4);  // a frame, then a header and two records of payload

    // Opened with libsodium: each record under its number as the nonce.
    std::string opened;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const std::string& r = records[i];
        std::uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES] = {static_cast<std::uint8_t>(i)};
        std::string plain(r.size() - 4 - 16, '\0');
        unsigned long long plain_bytes = 0;
        REQUIRE(crypto_aead_aes256gcm_decrypt(reinterpret_cast<unsigned char*>(plain.data()), &plain_bytes, nullptr,
                                              reinterpret_cast<const unsigned char*>(r.data() + 4), r.size() - 4,
                                              reinterpret_cast<const unsigned char*>(r.data()), 4, nonce,
                                              client.send.data()) == 0);
        opened += plain;
    }
    CHECK(opened.substr(kHeaderBytes, 100) == frames[0]);
    CHECK(opened.substr(2 * kHeaderBytes + 100) == frames[1]);

    // Sealed with libsodium, read by the channel.
    std::string raw;
    for (std::size_t i = 0; i < 2; ++i) {
        const std::string body = opened.substr(i == 0 ? 0 : kHeaderBytes + 100,
                                               i == 0 ? kHeaderBytes + 100 : std::string::npos);
        for (std::size_t at = 0; at < body.size(); at += kSealedRecord) {
            const std::string piece = body.substr(at, kSealedRecord);
            const auto n = static_cast<std::uint32_t>(piece.size() + 16);
            std::string record(4 + n, '\0');
            for (int b = 0; b < 4; ++b) record[b] = static_cast<char>((n >> (8 * b)) & 0xff);
            std::uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES] = {static_cast<std::uint8_t>(records_of(raw).size())};
            unsigned long long sealed = 0;
            crypto_aead_aes256gcm_encrypt(reinterpret_cast<unsigned char*>(record.data() + 4), &sealed,
                                          reinterpret_cast<const unsigned char*>(piece.data()), piece.size(),
                                          reinterpret_cast<const unsigned char*>(record.data()), 4, nullptr, nonce,
                                          client.send.data());
            raw += record;
        }
    }
    std::vector<std::string> payloads;
    CHECK(read_back(server, raw, &payloads).empty());
    CHECK(payloads == frames);
}

// Plaintext (nullopt), then each cipher's pair of ends.
static std::vector<std::optional<std::pair<SessionKeys, SessionKeys>>> every_channel_kind() {
    std::vector<std::optional<std::pair<SessionKeys, SessionKeys>>> ends{std::nullopt};
    for (const Cipher cipher : ciphers()) ends.push_back(keys_for(cipher));
    return ends;
}

TEST_CASE("bytes read ahead are read again as frames, plain or sealed, to the limit and no further") {
    for (const auto& keys : every_channel_kind()) {
        CAPTURE(keys ? to_string(keys->first.cipher) : "plaintext");
        Pair p;
        Channel c = keys ? Channel(p.a, keys->first) : Channel(p.a);
        Channel s = keys ? Channel(p.b, keys->second) : Channel(p.b);
        const std::string big = pattern(kSealedRecord + 77), small = "after";
        std::thread sender([&] {  // more than the socket holds: it waits for the reads
            write_frame(c, Frame{Kind::Data, 1, 2, 0, 4096}, big.data(), big.size());
            write_frame(c, Frame{Kind::Data, 1}, small.data(), small.size());
            ::shutdown(p.a, SHUT_WR);
        });
        // 100 KiB, part of the first frame, taken in pieces of at most 30,000 bytes.
        std::size_t held = 0;
        while (held < (100u << 10)) {
            REQUIRE(s.readable(30'000));  // the sender thread may start late on a busy machine
            const auto took = s.read_ahead(std::min<std::size_t>(30000, (100u << 10) - held));
            REQUIRE(took);
            CHECK(*took <= 30000);
            held += *took;
        }
        CHECK(held == (100u << 10));
        CHECK(s.waiting() >= held);
        CHECK(s.read_ahead(0) == std::optional<std::size_t>(0));
        Frame f;
        std::string payload;
        REQUIRE(read_frame(s, f, payload));
        CHECK(f.offset == 4096);
        CHECK(payload == big);
        // What is left, read ahead up to the peer's end: read_ahead then says
        // so, and the frame still comes whole before the orderly end.
        while (!s.readable(100) || s.read_ahead(1000)) {
        }
        sender.join();
        REQUIRE(read_frame(s, f, payload));
        CHECK(payload == small);
        CHECK_FALSE(read_frame(s, f, payload));
    }
}

TEST_CASE("small reads come through one buffer, large ones straight from the socket, in order with read-ahead") {
    for (const auto& keys : every_channel_kind()) {
        CAPTURE(keys ? to_string(keys->first.cipher) : "plaintext");
        Pair p;
        Channel c = keys ? Channel(p.a, keys->first) : Channel(p.a);
        Channel s = keys ? Channel(p.b, keys->second) : Channel(p.b);
        // Frames of every size around the buffer's bounds: headers and small
        // payloads read through it, with large payloads and read-ahead between.
        const std::size_t sizes[] = {0, 1, 100, 16383, 16384, 16385, 65535, 65536, 65537, 300000, 7, 40000, 3};
        std::thread sender([&] {
            for (std::size_t i = 0; i < std::size(sizes); ++i) {
                const std::string payload = pattern(sizes[i]);
                write_frame(c, Frame{Kind::Data, 1, static_cast<std::uint32_t>(i)}, payload.data(), payload.size());
            }
            ::shutdown(p.a, SHUT_WR);
        });
        Frame f;
        std::string payload;
        for (std::size_t i = 0; i < std::size(sizes); ++i) {
            CAPTURE(i);
            if (i == 5 || i == 10) {  // some of what follows taken ahead, as a stream does before its transfer is ready
                REQUIRE(s.readable(30'000));
                REQUIRE(s.read_ahead(5000));
            }
            REQUIRE(read_frame(s, f, payload));
            CHECK(f.file == i);
            CHECK(payload == pattern(sizes[i]));
        }
        CHECK_FALSE(read_frame(s, f, payload));
        sender.join();
    }
}

TEST_CASE("a frame read off the socket alone leaves what follows it there, for the stream's channel") {
    // A client reads the server's Proof this way, then the Have through its
    // channel; both arrive in one segment. Read through a buffer, the Have
    // went with the frame's temporary channel, and the move waited for ever.
    Pair p;
    const std::string proof = pattern(32), have = pattern(100);
    write_frame(p.a, Frame{Kind::Proof}, proof.data(), proof.size());
    write_frame(p.a, Frame{Kind::Have}, have.data(), have.size());
    ::shutdown(p.a, SHUT_WR);
    Frame f;
    std::string payload;
    REQUIRE(read_frame(p.b, f, payload));
    CHECK((f.kind == Kind::Proof && payload == proof));
    Channel c(p.b);
    REQUIRE(read_frame(c, f, payload));
    CHECK((f.kind == Kind::Have && payload == have));
    CHECK_FALSE(read_frame(c, f, payload));
}
