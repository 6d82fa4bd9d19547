// Key-based mutual authentication of every TCP stream of the data mover, and
// the keys of its optional encryption (docs/mover.md, "Authentication"), with
// the 32-byte key of `slabcast keygen` (key_file.h) that also signs the sync
// packets:
//
//   server -> client  Challenge: a fresh 32-byte nonce Ns; `extra`: what it
//                     requires and offers (below)
//   client -> server  Hello: nonce Nc, HMAC-SHA-256(key, "client hello", Ns,
//                     the Challenge's extra, the Hello's header, Nc, its JSON),
//                     then the JSON
//   server -> client  Proof: HMAC-SHA-256(key, "server proof", Ns, Nc, the client's MAC)
//
// Both nonces are fresh for each connection, so a Hello recorded on one is
// worth nothing on another, and neither side's MAC can stand in for the
// other's (each begins with its own label). MACs are compared in constant
// time. With encryption, each direction's session key is an HMAC of its own
// label, Ns, Nc and the client's MAC, so it is new for every connection.
#pragma once

#include "mover/channel.h"
#include "mover/wire.h"
#include "slabcast/control_packets.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace slabcast::mover {

using Key = control::SyncKey;
inline constexpr std::size_t kNonceBytes = 32, kMacBytes = 32;
// Ahead of the JSON in a Hello's payload: the client's nonce and its MAC.
inline constexpr std::size_t kHelloAuthBytes = kNonceBytes + kMacBytes;

// The Challenge's `extra`: what the server requires of the Hello, and offers.
inline constexpr std::uint64_t kRequiresKey = 1, kRequiresEncryption = 2, kOffersAes = 4;
// The Hello's `extra`: the client holds a key (its MAC is real); it asks for
// encryption; with AES-256-GCM (both CPUs have AES-NI), else XChaCha20-Poly1305.
inline constexpr std::uint64_t kHasKey = 1, kEncrypt = 2, kAes = 4;

// A refusal, worded for the person at either end.
struct AuthError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The Challenge as a client read it. Its `offset` is how long the server
// waits for the Hello, in milliseconds (0: no limit): a connection opened
// ahead of its Hello (early_streams.h) is used only well within it.
struct Challenge {
    Frame frame;
    std::array<std::uint8_t, kNonceBytes> nonce{};
    std::chrono::steady_clock::time_point read_at;
};
inline constexpr std::uint64_t kMaxHelloWaitMs = 600'000;  // serve --hello-timeout's largest

// Waits (up to `timeout_s`) for the server's Challenge on a new connection.
// Throws AuthError with the server's refusal, or when what came is not a Challenge.
Challenge read_challenge(int fd, int timeout_s);

class ServerHandshake {
public:
    // `require_encryption` needs a key (serve checks).
    explicit ServerHandshake(const std::optional<Key>& key, bool require_encryption = false);
    ~ServerHandshake();

    // The first frame on a connection, sent as it is accepted: 80 bytes, which
    // a fresh socket's buffer takes at once (no wait, even when non-blocking).
    // `hello_wait_ms`: how long the Hello may take (serve --hello-timeout).
    void send_challenge(int fd, std::uint64_t hello_wait_ms = 0) const;
    // Checks the Hello read from that connection and returns its JSON. With a
    // key, the Hello must carry a right MAC, and the Proof is sent back.
    // Throws AuthError with the message for the client and the log.
    std::string accept_hello(int fd, const Frame& hello, const std::string& payload);
    // The connection as the transfer reads and writes it from here on:
    // sealed if the Hello asked for encryption.
    Channel channel(int fd) const { return Channel(fd, keys_); }

private:
    std::uint64_t challenge_flags() const;

    std::optional<Key> key_;
    bool require_encryption_;
    std::array<std::uint8_t, kNonceBytes> nonce_{};
    SessionKeys keys_;
};

class ClientHandshake {
public:
    // `key`: from --key-file; none for a client without one. `encrypt`:
    // --encrypt (a server that requires encryption gets it regardless).
    explicit ClientHandshake(const std::optional<Key>& key, bool encrypt = false);
    ~ClientHandshake();

    // On a new connection: waits (up to `timeout_s`) for the server's
    // Challenge and sends the Hello, `json` for transfer `transfer`. Throws
    // AuthError when the server requires a key this client lacks (after the
    // Hello, so that the server logs the refusal too) or holds none while
    // this client has one (it could not tell that it is the right server).
    void send_hello(int fd, std::uint64_t transfer, const std::string& json, int timeout_s);
    // The same, answering a Challenge read already (read_challenge).
    void send_hello(int fd, const Challenge& challenge, std::uint64_t transfer, const std::string& json);
    // Reads the server's Proof, the first frame it sends after the Hello, and
    // checks it (nothing to read without a key). Throws AuthError, with the
    // server's own message when it refused the Hello.
    void expect_proof(int fd, int timeout_s);
    // Both: the stream is authenticated both ways when this returns.
    void run(int fd, std::uint64_t transfer, const std::string& json, int timeout_s);
    // After send_hello: the connection from here on, sealed if agreed.
    Channel channel(int fd) const { return Channel(fd, keys_); }
    Cipher cipher() const { return keys_.cipher; }

private:
    std::optional<Key> key_;
    bool encrypt_;
    std::array<std::uint8_t, kNonceBytes> server_nonce_{}, nonce_{};
    std::array<std::uint8_t, kMacBytes> mac_{};
    SessionKeys keys_;
};

// Whether `address` (as serve's --listen takes it; a name is resolved) is a
// loopback address only: then no other host can reach the port.
bool is_loopback(const std::string& address);

}  // namespace slabcast::mover
