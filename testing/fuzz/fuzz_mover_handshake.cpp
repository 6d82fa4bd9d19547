// libFuzzer harness: the data mover's handshake and sealed records
// (server/src/mover/auth.h, channel.h; docs/mover.md, "Authentication"), fed
// what a hostile peer sends, over a real socketpair, through the code
// `slabcast serve` runs on every connection: the Challenge sent, the Hello
// read by WaitingConnections (as serve's accept loop holds it), checked by
// ServerHandshake::accept_hello and parse_hello, then every frame after it
// read through the connection's Channel (sealed when the Hello asked for
// encryption). Or, the other way round, what a hostile server sends to a
// client: ClientHandshake (the Challenge, the Proof), then its Channel.
//
// The MACs and records a peer could only make with the key are made here by
// the harness itself, with libsodium and the formulas of docs/mover.md (not
// the project's code), when the input asks: an honest client's MAC over a
// Hello of the input's choosing, and records sealed with the client's session
// key around plaintext of the input's choosing, some of them changed on
// their way. So the fuzzer reaches what comes after the MAC and after the
// first record, and every length and size from the peer is tried.
//
// Input (little-endian):
//   u8 mode: 1 the server holds the key; 2 it requires encryption; 4 the
//     harness signs the Hello (else its MAC comes from the input); 8 the
//     records are sealed by the harness (else the rest goes as it is);
//     16 raw: everything after this byte goes to the server as it is;
//     32 the other way: the bytes are a server's, read by a client (1: the
//     client holds the key, 2: it asks for encryption)
//   (not raw) u64 the Hello's extra, u64 transfer, u16 L, L bytes of JSON,
//     32 bytes: the client's nonce, 32 bytes: its MAC (when not signed)
//   (sealed) records to the end: u8 op, u16 n, n bytes of plaintext; op & 3:
//     0 sealed as it should be, 1 its length replaced by a u32 that follows,
//     2 one bit flipped at a u16 that follows, 3 dropped (its number used)
//   (else) the rest, as it is
//
// Checks beyond "no crash, no sanitizer report, no exception but
// std::runtime_error": a Hello is accepted exactly when the rules of
// docs/mover.md say (a key's MAC, the requirements); a Hello the harness did
// not sign is never accepted by a server with a key (the fuzzer cannot
// replay one: the server's nonce is new each time); the Proof of an accepted
// Hello is the HMAC the docs give; a client with the key never accepts a
// proof from the input; the frames read after the Hello are the bytes sent,
// in order, and never a byte of a record changed or dropped, or of any
// record after it; every payload is the length its header says.
#include "fuzz_input.h"
#include "mover/auth.h"
#include "mover/channel.h"
#include "mover/hello.h"
#include "mover/stream_io.h"
#include "mover/waiting_connections.h"
#include "mover/wire.h"

#include <poll.h>
#include <sodium.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace slabcast::mover;
using slabcast::UniqueFd;

namespace {

constexpr std::uint8_t kServerKey = 1, kRequire = 2, kSigned = 4, kSealed = 8, kRaw = 16, kClientSide = 32;
constexpr std::size_t kMaxInput = 64u << 10;


const Key& key() {
    static const Key k = [] {
        Key k;
        for (std::size_t i = 0; i < k.bytes.size(); ++i) k.bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);
        return k;
    }();
    return k;
}

// HMAC-SHA-256 with the key over the parts, one after another (docs/mover.md).
std::string hmac(std::initializer_list<std::string> parts) {
    crypto_auth_hmacsha256_state state;
    crypto_auth_hmacsha256_init(&state, key().bytes.data(), key().bytes.size());
    for (const auto& p : parts)
        crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(p.data()), p.size());
    std::string out(crypto_auth_hmacsha256_BYTES, '\0');
    crypto_auth_hmacsha256_final(&state, reinterpret_cast<unsigned char*>(out.data()));
    return out;
}

std::string label(const char* text) { return std::string(text, std::strlen(text) + 1); }  // with its NUL

std::string le(std::uint64_t v, std::size_t bytes) {
    std::string out(bytes, '\0');
    for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<char>(v >> (8 * i));
    return out;
}

std::string header_bytes(const Frame& f) {
    std::string out(kHeaderBytes, '\0');
    encode_header(f, reinterpret_cast<std::uint8_t*>(out.data()));
    return out;
}

// Records as docs/mover.md says an honest end seals them: u32 n, then the
// AEAD of the plaintext under the direction's key, nonce = the record's
// number, the 4 length bytes as associated data.
class Sealer {
public:
    Sealer(bool aes, const std::string& session_key) : aes_(aes), key_(session_key) {}
    const std::string& last() const { return last_; }  // the last record sealed, as sealed
    std::string seal(const std::string& plain) {
        const std::string length = le(plain.size() + 16, 4);
        std::string out(plain.size() + 16, '\0');
        const std::string nonce = le(records_++, 8) + std::string(16, '\0');
        unsigned long long n = 0;
        const auto* ad = reinterpret_cast<const unsigned char*>(length.data());
        const auto* m = reinterpret_cast<const unsigned char*>(plain.data());
        auto* c = reinterpret_cast<unsigned char*>(out.data());
        const auto* npub = reinterpret_cast<const unsigned char*>(nonce.data());
        const auto* k = reinterpret_cast<const unsigned char*>(key_.data());
        if (aes_) crypto_aead_aes256gcm_encrypt(c, &n, m, plain.size(), ad, 4, nullptr, npub, k);
        else crypto_aead_xchacha20poly1305_ietf_encrypt(c, &n, m, plain.size(), ad, 4, nullptr, npub, k);
        last_ = length + out;
        return last_;
    }
    void skip() { ++records_; }

private:
    bool aes_;
    std::string key_, last_;
    std::uint64_t records_ = 0;
};

struct Pair {
    int peer = -1, near = -1;  // the hostile end (the input), this end (the code under test)
    Pair() {
        int ends[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) __builtin_trap();
        peer = ends[0];
        near = ends[1];
    }
    ~Pair() {
        if (peer >= 0) ::close(peer);
        if (near >= 0) ::close(near);
    }
};

// Writes `bytes` to the hostile end, then ends that direction: at once when
// the socket's buffer surely takes them (most inputs: no thread to start),
// else from a thread of its own (joinable then), which gives up quietly when
// this end stops reading (closes) first.
std::thread send_all(int fd, std::string bytes) {
    int buffer = 0;
    socklen_t length = sizeof buffer;
    if (::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, &length) == 0 && bytes.size() <= std::size_t(buffer) / 4) {
        if (!bytes.empty()) write_full(fd, bytes.data(), bytes.size());
        ::shutdown(fd, SHUT_WR);
        return {};
    }
    return std::thread([fd, bytes = std::move(bytes)] {
        try {
            if (!bytes.empty()) write_full(fd, bytes.data(), bytes.size());
        } catch (const std::runtime_error&) {
        }
        ::shutdown(fd, SHUT_WR);
    });
}

// Frames read through `c` until its end or its first refusal, each appended as
// it was on the wire (header and payload) to `got`.
void read_frames(Channel& c, std::string& got) {
    try {
        Frame f;
        std::string payload;
        while (read_frame(c, f, payload)) {
            if (payload.size() != f.length) __builtin_trap();
            got += header_bytes(f) + payload;
            (void)c.waiting();  // as the block loop asks it after each frame
        }
    } catch (const std::runtime_error&) {
    }
}

// A hostile server's bytes, read by a client.
void client_side(std::uint8_t mode, FuzzInput& in) {
    Pair p;
    const bool has_key = mode & kServerKey;
    std::thread writer = send_all(p.peer, in.rest());
    ClientHandshake client(has_key ? std::optional<Key>(key()) : std::nullopt, has_key && (mode & kRequire));
    bool believed = false;
    std::string got;
    try {
        client.send_hello(p.near, 1, R"({"stream":0,"dest":"d"})", 2);
        client.expect_proof(p.near, 2);
        believed = true;
        Channel c = client.channel(p.near);
        read_frames(c, got);
    } catch (const std::runtime_error&) {
    }
    // The input cannot hold the proof for the client's fresh nonce.
    if (has_key && believed) __builtin_trap();
    ::shutdown(p.near, SHUT_RDWR);
    if (writer.joinable()) writer.join();
}

// serve's side of one connection, as its accept loop and stream thread run
// it: held until its Hello is whole, the Hello checked, then its frames read.
// Returns with this end closed or shut down.
void serve_connection(std::uint8_t mode, Pair& p, ServerHandshake& server, const std::string& server_nonce, bool aes,
                      const std::optional<std::string>& expected) {
    const bool has_key = mode & kServerKey, require = has_key && (mode & kRequire);
    WaitingConnections waiting(1, std::chrono::seconds(5), kMaxHelloBytes);
    waiting.add(UniqueFd(p.near), "fuzz");
    p.near = -1;  // the waiting room's now
    std::optional<Arrival> arrival;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(6);
    while (!arrival && waiting.size() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::vector<pollfd> polled;
        waiting.poll_set(polled);
        ::poll(polled.data(), polled.size(), 50);
        for (Arrival& a : waiting.service(polled)) arrival = std::move(a);
    }
    if (arrival) {
        Arrival& a = *arrival;
        bool accepted = false;
        std::string json;
        try {
            json = server.accept_hello(a.fd.get(), a.hello, a.payload);
            accepted = true;
        } catch (const AuthError&) {
        }
        if (!(mode & kRaw)) {
            // docs/mover.md: a key's MAC is required, and the server's demands met.
            const bool encrypt = a.hello.extra & kEncrypt;
            const bool should = has_key ? (a.hello.extra & kHasKey) && (mode & kSigned) && (!require || encrypt) &&
                                              !(encrypt && aes && !crypto_aead_aes256gcm_is_available())
                                        : !encrypt;
            if (accepted != should) __builtin_trap();
        } else if (has_key && accepted) {
            __builtin_trap();  // a MAC from the input, for a nonce it never saw
        }
        if (accepted) {
            if (has_key) {
                // The Proof: HMAC(key, "server proof", Ns, Nc, MACc), on the wire before anything else.
                Frame proof;
                std::string payload;
                const std::string nc = a.payload.substr(0, kNonceBytes), macc = a.payload.substr(kNonceBytes, kMacBytes);
                if (!read_frame(p.peer, proof, payload) || proof.kind != Kind::Proof ||
                    payload != hmac({label("slabcast mover 3 server proof"), server_nonce, nc, macc}))
                    __builtin_trap();
            }
            try {
                (void)parse_hello(a.hello.transfer, json);
            } catch (const std::runtime_error&) {  // serve refuses it; the records are read all the same
            }
            Channel c = server.channel(a.fd.get());
            std::string got;
            read_frames(c, got);
            // Only bytes sent, in order; none of a record changed on its way, nor after it.
            if (expected && got.compare(0, std::string::npos, *expected, 0, got.size()) != 0) __builtin_trap();
            if (expected && got.size() > expected->size()) __builtin_trap();
        }
        ::shutdown(a.fd.get(), SHUT_RDWR);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);
    if (sodium_init() < 0) __builtin_trap();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > kMaxInput) return 0;
    FuzzInput in(data, size);
    const auto mode = in.take_or_short<std::uint8_t>();
    if (mode & kClientSide) {
        client_side(mode, in);
        return 0;
    }
    const bool has_key = mode & kServerKey, require = has_key && (mode & kRequire);
    Pair p;
    ServerHandshake server(has_key ? std::optional<Key>(key()) : std::nullopt, require);
    server.send_challenge(p.near);
    Frame challenge;
    std::string server_nonce;
    if (!read_frame(p.peer, challenge, server_nonce) || challenge.kind != Kind::Challenge ||
        server_nonce.size() != kNonceBytes)
        __builtin_trap();

    // What the peer sends: its Hello, then what follows it, and `expected`,
    // the plaintext an honest reader may hand on (up to the first record
    // changed on its way; nullopt when the harness cannot tell).
    std::string sent;
    Frame hello{Kind::Hello};
    std::string client_nonce, mac;
    std::optional<std::string> expected;
    bool aes = false;
    if (mode & kRaw) {
        sent = in.rest();
    } else {
        hello.extra = in.take_or_short<std::uint64_t>();
        hello.transfer = in.take_or_short<std::uint64_t>();
        const std::string json = in.bytes(in.take_or_short<std::uint16_t>());
        client_nonce = in.bytes(kNonceBytes);
        client_nonce.resize(kNonceBytes, '\0');
        hello.length = static_cast<std::uint32_t>(kHelloAuthBytes + json.size());
        const std::string head = header_bytes(hello);
        if (mode & kSigned) {
            mac = hmac({label("slabcast mover 3 client hello"), server_nonce, le(challenge.extra, 8), head, client_nonce,
                        json});
        } else {
            mac = in.bytes(kMacBytes);
            mac.resize(kMacBytes, '\0');
        }
        sent = head + client_nonce + mac + json;
        const bool encrypt = hello.extra & kEncrypt;
        aes = encrypt && (hello.extra & kAes);
        if ((mode & kSealed) && encrypt) {
            Sealer sealer(aes, hmac({label("slabcast mover 3 key client to server"), server_nonce, client_nonce, mac}));
            std::string plain;
            bool changed = false;
            while (in.left() > 0) {
                const auto op = in.take_or_short<std::uint8_t>() & 3;
                const std::string piece = in.bytes(in.take_or_short<std::uint16_t>());
                std::string record;
                if (op == 3) {
                    sealer.skip();
                } else {
                    record = sealer.seal(piece);
                    if (op == 1) {
                        record.replace(0, 4, le(in.take_or_short<std::uint32_t>(), 4));
                    } else if (op == 2) {
                        const std::size_t at = in.take_or_short<std::uint16_t>() % record.size();
                        record[at] = static_cast<char>(record[at] ^ (1 << (at % 8)));
                    }
                }
                // A length "replaced" by itself leaves the record as it was.
                if (!changed && (op == 3 || record != sealer.last())) {
                    changed = true;
                    expected = plain;
                }
                plain += piece;
                sent += record;
            }
            if (!changed) expected = plain;
        } else {
            const std::string rest = in.rest();
            sent += rest;
            if (!encrypt) expected = rest;
        }
    }
    std::thread writer = send_all(p.peer, sent);
    serve_connection(mode, p, server, server_nonce, aes, expected);
    if (writer.joinable()) writer.join();  // this end is closed or shut down: the writer has ended
    return 0;
}
