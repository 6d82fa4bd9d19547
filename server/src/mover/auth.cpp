#include "mover/auth.h"

#include "mover/channel.h"
#include "mover/peer_text.h"
#include "mover/stream_io.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sodium.h>

#include <cerrno>
#include <cstring>

namespace slabcast::mover {
namespace {

// Each MAC begins with its own label (with its NUL), so that one side's MAC is
// never the other's, nor the sync packets'.
constexpr char kClientLabel[] = "slabcast mover 3 client hello";
constexpr char kServerLabel[] = "slabcast mover 3 server proof";
constexpr char kToServerLabel[] = "slabcast mover 3 key client to server";
constexpr char kToClientLabel[] = "slabcast mover 3 key server to client";

void init_sodium() {
    if (sodium_init() < 0) throw std::runtime_error("libsodium could not initialise");
}

class Mac {
public:
    Mac(const Key& key, const char* label, std::size_t label_bytes) {
        crypto_auth_hmacsha256_init(&state_, key.bytes.data(), key.bytes.size());
        add(label, label_bytes);
    }
    ~Mac() { sodium_memzero(&state_, sizeof state_); }
    Mac& add(const void* data, std::size_t n) {
        crypto_auth_hmacsha256_update(&state_, static_cast<const unsigned char*>(data), n);
        return *this;
    }
    std::array<std::uint8_t, kMacBytes> done() {
        std::array<std::uint8_t, kMacBytes> out{};
        crypto_auth_hmacsha256_final(&state_, out.data());
        return out;
    }

private:
    crypto_auth_hmacsha256_state state_;
};

// The Challenge's flags as the client saw them are in its MAC too: a
// Challenge changed on its way (a requirement dropped) fails the Hello.
std::array<std::uint8_t, kMacBytes> client_mac(const Key& key, const std::uint8_t* server_nonce,
                                               std::uint64_t challenge_flags, const std::uint8_t* header,
                                               const std::uint8_t* client_nonce, const std::string& json) {
    std::uint8_t flags[8], *at = flags;
    put_le<std::uint64_t>(at, challenge_flags);
    return Mac(key, kClientLabel, sizeof kClientLabel)
        .add(server_nonce, kNonceBytes)
        .add(flags, sizeof flags)
        .add(header, kHeaderBytes)
        .add(client_nonce, kNonceBytes)
        .add(json.data(), json.size())
        .done();
}

std::array<std::uint8_t, kMacBytes> server_mac(const Key& key, const std::uint8_t* server_nonce,
                                               const std::uint8_t* client_nonce, const std::uint8_t* client_mac) {
    return Mac(key, kServerLabel, sizeof kServerLabel)
        .add(server_nonce, kNonceBytes)
        .add(client_nonce, kNonceBytes)
        .add(client_mac, kMacBytes)
        .done();
}

// This end's keys for one connection: each direction's is an HMAC of its own
// label over both nonces and the client's MAC (so over the whole Hello).
SessionKeys session_keys(const Key& key, const std::uint8_t* server_nonce, const std::uint8_t* client_nonce,
                         const std::uint8_t* client_mac, Cipher cipher, bool client) {
    auto derive = [&](const char* label, std::size_t label_bytes) {
        return Mac(key, label, label_bytes)
            .add(server_nonce, kNonceBytes)
            .add(client_nonce, kNonceBytes)
            .add(client_mac, kMacBytes)
            .done();
    };
    auto to_server = derive(kToServerLabel, sizeof kToServerLabel);
    auto to_client = derive(kToClientLabel, sizeof kToClientLabel);
    SessionKeys keys;
    keys.cipher = cipher;
    keys.send = client ? to_server : to_client;
    keys.receive = client ? to_client : to_server;
    sodium_memzero(to_server.data(), to_server.size());
    sodium_memzero(to_client.data(), to_client.size());
    return keys;
}

void forget(SessionKeys& keys) {
    sodium_memzero(keys.send.data(), keys.send.size());
    sodium_memzero(keys.receive.data(), keys.receive.size());
}

// One frame from the server, within `timeout_s`; `what` names it in errors.
void read_answer(int fd, int timeout_s, const char* what, Frame& f, std::string& payload) {
    pollfd p{fd, POLLIN, 0};
    int r;
    while ((r = ::poll(&p, 1, timeout_s * 1000)) < 0 && errno == EINTR) {
    }
    if (r == 0)
        throw AuthError(std::string("no ") + what + " from the server within " + std::to_string(timeout_s) +
                        " s (is it a slabcast serve of this release?)");
    if (!read_frame(fd, f, payload, 64u << 10))
        throw AuthError(std::string("the server closed the connection before its ") + what);
}

}  // namespace

ServerHandshake::ServerHandshake(const std::optional<Key>& key, bool require_encryption)
    : key_(key), require_encryption_(require_encryption) {
    init_sodium();
    randombytes_buf(nonce_.data(), nonce_.size());
}

ServerHandshake::~ServerHandshake() {
    if (key_) sodium_memzero(key_->bytes.data(), key_->bytes.size());
    forget(keys_);
}

std::uint64_t ServerHandshake::challenge_flags() const {
    return (key_ ? kRequiresKey : 0) | (require_encryption_ ? kRequiresEncryption : 0) |
           (crypto_aead_aes256gcm_is_available() ? kOffersAes : 0);
}

void ServerHandshake::send_challenge(int fd, std::uint64_t hello_wait_ms) const {
    Frame f{Kind::Challenge};
    f.extra = challenge_flags();
    f.offset = hello_wait_ms;
    write_frame(fd, f, nonce_.data(), nonce_.size());
}

std::string ServerHandshake::accept_hello(int fd, const Frame& hello, const std::string& payload) {
    if (hello.kind != Kind::Hello) throw AuthError("expected a Hello frame");
    if (payload.size() < kHelloAuthBytes) throw AuthError("a Hello too short to hold a nonce and a MAC");
    const auto* client_nonce = reinterpret_cast<const std::uint8_t*>(payload.data());
    const auto* mac = client_nonce + kNonceBytes;
    std::string json = payload.substr(kHelloAuthBytes);
    const bool encrypt = hello.extra & kEncrypt;
    if (!key_) {
        if (encrypt) throw AuthError("encryption needs a key at both ends, and this server has none (--key-file)");
        return json;
    }
    if (!(hello.extra & kHasKey))
        throw AuthError("the server requires authentication: give this client the server's key file with "
                        "--key-file (slabcast keygen makes one)");
    std::uint8_t header[kHeaderBytes];
    encode_header(hello, header);  // the header as it came: every field of it is decoded
    const auto expected = client_mac(*key_, nonce_.data(), challenge_flags(), header, client_nonce, json);
    if (crypto_verify_32(mac, expected.data()) != 0)
        throw AuthError("authentication failed: the server and this client hold different keys "
                        "(or the Hello was changed on its way)");
    if (require_encryption_ && !encrypt)
        throw AuthError("this server requires encryption: give the client --encrypt");
    if (encrypt) {
        const bool aes = hello.extra & kAes;
        if (aes && !crypto_aead_aes256gcm_is_available())
            throw AuthError("the client chose AES-256-GCM, which this server's CPU cannot run (no AES-NI)");
        keys_ = session_keys(*key_, nonce_.data(), client_nonce, mac,
                             aes ? Cipher::Aes256Gcm : Cipher::XChaCha20Poly1305, false);
    }
    const auto proof = server_mac(*key_, nonce_.data(), client_nonce, mac);
    write_frame(fd, Frame{Kind::Proof, hello.transfer}, proof.data(), proof.size());
    return json;
}

ClientHandshake::ClientHandshake(const std::optional<Key>& key, bool encrypt) : key_(key), encrypt_(encrypt) {
    if (encrypt_ && !key_) throw std::invalid_argument("--encrypt needs --key-file (the session keys come from it)");
    init_sodium();
    randombytes_buf(nonce_.data(), nonce_.size());
}

ClientHandshake::~ClientHandshake() {
    if (key_) sodium_memzero(key_->bytes.data(), key_->bytes.size());
    forget(keys_);
}

Challenge read_challenge(int fd, int timeout_s) {
    Challenge c;
    std::string nonce;
    read_answer(fd, timeout_s, "challenge", c.frame, nonce);
    c.read_at = std::chrono::steady_clock::now();
    if (c.frame.kind == Kind::Error) throw AuthError("the server refused the connection: " + printable(nonce));
    if (c.frame.kind != Kind::Challenge || nonce.size() != kNonceBytes)
        throw AuthError("the server did not begin with a challenge (is it a slabcast serve?)");
    std::memcpy(c.nonce.data(), nonce.data(), kNonceBytes);
    return c;
}

void ClientHandshake::send_hello(int fd, std::uint64_t transfer, const std::string& json, int timeout_s) {
    send_hello(fd, read_challenge(fd, timeout_s), transfer, json);
}

void ClientHandshake::send_hello(int fd, const Challenge& c, std::uint64_t transfer, const std::string& json) {
    const Frame& challenge = c.frame;
    const bool key_required = challenge.extra & kRequiresKey;
    if (key_ && !key_required)
        throw AuthError("authentication failed: the server holds no key (start it with --key-file), so this "
                        "client, given one, cannot tell that it is the right server");
    server_nonce_ = c.nonce;
    // A server that requires encryption gets it from any client with a key.
    const bool encrypt = key_ && (encrypt_ || (challenge.extra & kRequiresEncryption));
    const bool aes = encrypt && (challenge.extra & kOffersAes) && crypto_aead_aes256gcm_is_available();

    Frame hello{Kind::Hello, transfer};
    hello.extra = (key_ ? kHasKey : 0) | (encrypt ? kEncrypt : 0) | (aes ? kAes : 0);
    hello.length = static_cast<std::uint32_t>(kHelloAuthBytes + json.size());
    std::string bytes(kHeaderBytes + hello.length, '\0');
    auto* out = reinterpret_cast<std::uint8_t*>(bytes.data());
    encode_header(hello, out);
    if (key_) mac_ = client_mac(*key_, server_nonce_.data(), challenge.extra, out, nonce_.data(), json);
    if (encrypt)
        keys_ = session_keys(*key_, server_nonce_.data(), nonce_.data(), mac_.data(),
                             aes ? Cipher::Aes256Gcm : Cipher::XChaCha20Poly1305, true);
    std::memcpy(out + kHeaderBytes, nonce_.data(), kNonceBytes);
    std::memcpy(out + kHeaderBytes + kNonceBytes, mac_.data(), kMacBytes);
    std::memcpy(out + kHeaderBytes + kHelloAuthBytes, json.data(), json.size());
    write_full(fd, bytes.data(), bytes.size());
    if (key_required && !key_)
        throw AuthError("the server requires authentication: give this client the server's key file with "
                        "--key-file (slabcast keygen makes one)");
}

void ClientHandshake::expect_proof(int fd, int timeout_s) {
    if (!key_) return;
    Frame f;
    std::string payload;
    read_answer(fd, timeout_s, "proof", f, payload);
    if (f.kind == Kind::Error) throw AuthError(printable(payload));  // the server's refusal, in its words
    if (f.kind != Kind::Proof || payload.size() != kMacBytes)
        throw AuthError("the server did not answer the Hello with its proof");
    const auto expected = server_mac(*key_, server_nonce_.data(), nonce_.data(), mac_.data());
    if (crypto_verify_32(reinterpret_cast<const unsigned char*>(payload.data()), expected.data()) != 0)
        throw AuthError("authentication failed: the server's proof is wrong: it holds a different key "
                        "(or is not the server meant)");
}

void ClientHandshake::run(int fd, std::uint64_t transfer, const std::string& json, int timeout_s) {
    send_hello(fd, transfer, json, timeout_s);
    expect_proof(fd, timeout_s);
}

bool is_loopback(const std::string& address) {
    if (address.empty()) return false;  // every address
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0) return false;
    bool loopback = found != nullptr;
    for (const addrinfo* a = found; a; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
            loopback = loopback && (ntohl(in->sin_addr.s_addr) >> 24) == 127;
        } else if (a->ai_family == AF_INET6) {
            const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
            loopback = loopback && IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
        } else {
            loopback = false;
        }
    }
    ::freeaddrinfo(found);
    return loopback;
}

}  // namespace slabcast::mover
