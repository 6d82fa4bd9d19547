#include "mover/channel.h"

#include "mover/stream_io.h"

#include <openssl/evp.h>
#include <sodium.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace slabcast::mover {

static_assert(crypto_aead_aes256gcm_ABYTES == 16 && crypto_aead_xchacha20poly1305_ietf_ABYTES == 16);
static_assert(crypto_aead_aes256gcm_KEYBYTES == 32 && crypto_aead_xchacha20poly1305_ietf_KEYBYTES == 32);

namespace {

constexpr std::size_t kLengthBytes = 4, kTagBytes = 16;

}  // namespace

const char* to_string(Cipher c) {
    switch (c) {
    case Cipher::Aes256Gcm: return "AES-256-GCM";
    case Cipher::XChaCha20Poly1305: return "XChaCha20-Poly1305";
    case Cipher::None: break;
    }
    return "none";
}

// One direction's AEAD: its key (expanded once) and the number of the next
// record, which is that record's nonce. AES-256-GCM runs through OpenSSL's
// EVP (AES-NI with carry-less multiply), about twice libsodium 1.0.18's speed
// (docs/mover.md, "Measured choices"); the records are the same bytes
// libsodium seals, so ends of either build agree (test_mover_channel checks
// it). XChaCha20-Poly1305, for CPUs without AES-NI, stays libsodium's.
class Channel::Seal {
public:
    Seal(Cipher cipher, const std::array<std::uint8_t, 32>& key, bool sealing) : cipher_(cipher), key_(key) {
        if (sodium_init() < 0) throw std::runtime_error("libsodium could not initialise");
        if (cipher_ != Cipher::Aes256Gcm) return;
        if (!crypto_aead_aes256gcm_is_available()) throw std::runtime_error("AES-256-GCM needs AES-NI");
        aes_.reset(EVP_CIPHER_CTX_new());
        const auto init = sealing ? EVP_EncryptInit_ex : EVP_DecryptInit_ex;
        if (!aes_ || init(aes_.get(), EVP_aes_256_gcm(), nullptr, key_.data(), nullptr) != 1)
            throw std::runtime_error("OpenSSL could not set up AES-256-GCM");
    }
    ~Seal() { sodium_memzero(key_.data(), key_.size()); }  // EVP_CIPHER_CTX_free clears the expanded key

    // `out` takes n + kTagBytes bytes.
    void seal(const std::uint8_t* plain, std::size_t n, const std::uint8_t* ad, std::uint8_t* out) {
        std::uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
        next_nonce(nonce);
        if (cipher_ != Cipher::Aes256Gcm) {
            unsigned long long sealed = 0;
            crypto_aead_xchacha20poly1305_ietf_encrypt(out, &sealed, plain, n, ad, kLengthBytes, nullptr, nonce,
                                                       key_.data());
            return;
        }
        EVP_CIPHER_CTX* c = aes_.get();
        int len = 0;
        if (EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, nonce) != 1 ||
            EVP_EncryptUpdate(c, nullptr, &len, ad, kLengthBytes) != 1 ||
            EVP_EncryptUpdate(c, out, &len, plain, static_cast<int>(n)) != 1 ||
            EVP_EncryptFinal_ex(c, out + n, &len) != 1 ||
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, kTagBytes, out + n) != 1)
            throw std::runtime_error("OpenSSL could not seal a record");
    }

    // false when the record is not the next one sealed with this key.
    bool open(const std::uint8_t* sealed, std::size_t n, const std::uint8_t* ad, std::uint8_t* out) {
        std::uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
        next_nonce(nonce);
        if (cipher_ != Cipher::Aes256Gcm) {
            unsigned long long plain = 0;
            return crypto_aead_xchacha20poly1305_ietf_decrypt(out, &plain, nullptr, sealed, n, ad, kLengthBytes,
                                                              nonce, key_.data()) == 0;
        }
        // n >= kTagBytes (read_record). GCM writes the plaintext before it
        // checks the tag: `out` holds unchecked bytes when this returns false,
        // and every caller throws then.
        const std::size_t plain = n - kTagBytes;
        EVP_CIPHER_CTX* c = aes_.get();
        int len = 0;
        std::uint8_t tag[kTagBytes];
        std::memcpy(tag, sealed + plain, kTagBytes);
        return EVP_DecryptInit_ex(c, nullptr, nullptr, nullptr, nonce) == 1 &&
               EVP_DecryptUpdate(c, nullptr, &len, ad, kLengthBytes) == 1 &&
               EVP_DecryptUpdate(c, out, &len, sealed, static_cast<int>(plain)) == 1 &&
               EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag) == 1 &&
               EVP_DecryptFinal_ex(c, out + plain, &len) == 1;
    }

    Cipher cipher() const { return cipher_; }

private:
    // The record number, little-endian, in front of zeros (12 bytes are used
    // by AES-GCM, 24 by XChaCha20). Under one key no number comes twice.
    void next_nonce(std::uint8_t* nonce) {
        if (records_ == std::numeric_limits<std::uint64_t>::max())
            throw std::runtime_error("2^64 records on one stream: no nonce left");
        std::memset(nonce, 0, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
        std::uint8_t* at = nonce;
        put_le<std::uint64_t>(at, records_);
        ++records_;
    }

    struct FreeContext {
        void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
    };
    Cipher cipher_;
    std::array<std::uint8_t, 32> key_;
    std::unique_ptr<EVP_CIPHER_CTX, FreeContext> aes_;
    std::uint64_t records_ = 0;
};

Channel::Channel(int fd) : fd_(fd) {}

Channel Channel::exact(int fd) {
    Channel c(fd);
    c.direct_read_ = 0;
    return c;
}

Channel::Channel(int fd, const SessionKeys& keys) : fd_(fd) {
    if (keys.cipher == Cipher::None) return;
    out_ = std::make_unique<Seal>(keys.cipher, keys.send, true);
    in_ = std::make_unique<Seal>(keys.cipher, keys.receive, false);
}

Channel::Channel(Channel&&) noexcept = default;
Channel& Channel::operator=(Channel&&) noexcept = default;
Channel::~Channel() = default;

Cipher Channel::cipher() const { return out_ ? out_->cipher() : Cipher::None; }

void Channel::send_file(int file, std::uint64_t offset, std::size_t length) {
    if (!out_) return mover::send_file(fd_, file, offset, length);
    std::vector<std::uint8_t> buf(std::min(length, kSealedRecord));
    for (std::size_t sent = 0; sent < length;) {
        const std::size_t n = std::min(buf.size(), length - sent);
        read_or_zeros(file, offset + sent, buf.data(), n);
        write_full(buf.data(), n);
        sent += n;
    }
}

void Channel::write_full(const void* buf, std::size_t n, bool more) {
    if (!out_) return mover::write_full(fd_, buf, n, more);
    const auto* p = static_cast<const std::uint8_t*>(buf);
    do {  // an empty write is an empty record: nothing is sent unsealed
        const std::size_t piece = std::min(n, kSealedRecord);
        out_record_.resize(kLengthBytes + piece + kTagBytes);
        std::uint8_t* length = out_record_.data();
        put_le<std::uint32_t>(length, static_cast<std::uint32_t>(piece + kTagBytes));
        out_->seal(p, piece, out_record_.data(), out_record_.data() + kLengthBytes);
        mover::write_full(fd_, out_record_.data(), out_record_.size());
        p += piece;
        n -= piece;
    } while (n > 0);
}

// The next record, opened into `room` (`room_bytes` long) when it fits there
// (a whole block's records open straight into the ring), else into
// in_plain_. Returns its plaintext bytes if it went into `room`, else 0;
// nullopt on an orderly end before it.
std::optional<std::size_t> Channel::read_record(std::uint8_t* room, std::size_t room_bytes) {
    std::uint8_t head[kLengthBytes];
    if (!socket_read_full(head, sizeof head)) return std::nullopt;
    const std::uint8_t* at = head;
    const auto n = take_le<std::uint32_t>(at);
    if (n < kTagBytes || n > kSealedRecord + kTagBytes)
        throw std::runtime_error("a sealed record of " + std::to_string(n) + " bytes, where " +
                                 std::to_string(kTagBytes) + ".." + std::to_string(kSealedRecord + kTagBytes) +
                                 " belong: the stream is out of step");
    in_record_.resize(n);
    if (!socket_read_full(in_record_.data(), n))
        throw std::runtime_error("the peer closed the connection in the middle of a sealed record");
    const std::size_t plain = n - kTagBytes;
    const bool direct = plain > 0 && plain <= room_bytes;
    if (!direct) {
        in_plain_.resize(plain);
        in_at_ = 0;
    }
    if (!in_->open(in_record_.data(), n, head, direct ? room : in_plain_.data()))
        throw std::runtime_error("a sealed record failed its check: it was changed, dropped, repeated or reordered "
                                 "on its way");
    return direct ? plain : 0;
}

bool Channel::read_full(void* buf, std::size_t n) {
    if (!in_) return socket_read_full(buf, n);
    auto* p = static_cast<std::uint8_t*>(buf);
    std::size_t got = 0;
    while (got < n) {
        if (in_at_ == in_plain_.size()) {
            const auto opened = read_record(p + got, n - got);
            if (!opened) {
                if (got == 0) return false;
                throw std::runtime_error("the peer closed the connection in the middle of a frame");
            }
            got += *opened;
            continue;
        }
        const std::size_t take = std::min(n - got, in_plain_.size() - in_at_);
        std::memcpy(p + got, in_plain_.data() + in_at_, take);
        in_at_ += take;
        got += take;
    }
    return true;
}

std::size_t Channel::waiting() const {
    int on_socket = 0;
    if (::ioctl(fd_, FIONREAD, &on_socket) != 0 || on_socket < 0) on_socket = 0;
    const auto raw = static_cast<std::size_t>(on_socket) + ahead_bytes_ + (in_buffer_end_ - in_buffer_at_);
    if (!in_) return raw;
    return (in_plain_.size() - in_at_) + (raw > kLengthBytes + kTagBytes ? raw - kLengthBytes - kTagBytes : 0);
}

std::size_t Channel::take_buffered(std::uint8_t* to, std::size_t n) {
    const std::size_t take = std::min(n, in_buffer_end_ - in_buffer_at_);
    std::memcpy(to, in_buffer_.get() + in_buffer_at_, take);
    in_buffer_at_ += take;
    return take;
}

bool Channel::socket_read_full(void* buf, std::size_t n) {
    auto* p = static_cast<std::uint8_t*>(buf);
    // in_buffer_'s bytes came off the socket before any read_ahead took: a
    // refill happens only once both are empty.
    std::size_t got = in_buffer_ ? take_buffered(p, n) : 0;
    while (got < n && !ahead_.empty()) {
        const std::vector<std::uint8_t>& piece = ahead_.front();
        const std::size_t take = std::min(n - got, piece.size() - ahead_at_);
        std::memcpy(p + got, piece.data() + ahead_at_, take);
        got += take;
        ahead_at_ += take;
        ahead_bytes_ -= take;
        if (ahead_at_ == piece.size()) {
            ahead_.pop_front();
            ahead_at_ = 0;
        }
    }
    while (got < n && deadline_) {
        // Straight into `buf`, as much as is there each time, the deadline
        // asked before every wait (a manifest, which is small and read once).
        await_deadline();
        const std::size_t r = recv_some(fd_, p + got, n - got);
        if (r == 0) break;
        got += r;
    }
    while (got < n) {
        if (n - got >= direct_read_) {
            if (mover::read_full(fd_, p + got, n - got)) return true;
            break;
        }
        if (!in_buffer_) in_buffer_ = std::make_unique<std::uint8_t[]>(kInBuffer);
        const std::size_t r = recv_some(fd_, in_buffer_.get(), kInBuffer);
        if (r == 0) break;
        in_buffer_at_ = 0;
        in_buffer_end_ = r;
        got += take_buffered(p + got, n - got);
    }
    if (got == n) return true;
    if (got == 0) return false;
    throw std::runtime_error("the peer closed the connection in the middle of a frame");
}

std::optional<std::size_t> Channel::read_ahead(std::size_t most) {
    if (most == 0) return 0;
    std::vector<std::uint8_t> piece(most);
    const ssize_t r = ::recv(fd_, piece.data(), most, MSG_DONTWAIT);
    if (r > 0) {
        piece.resize(static_cast<std::size_t>(r));
        piece.shrink_to_fit();
        ahead_.push_back(std::move(piece));
        ahead_bytes_ += static_cast<std::size_t>(r);
        return static_cast<std::size_t>(r);
    }
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return std::nullopt;  // closed or failed: the reads find out for themselves once the held bytes are taken
}

void Channel::await_deadline() const {
    for (;;) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline_ - std::chrono::steady_clock::now()).count();
        if (left <= 0) throw DeadlinePassed();
        pollfd p{fd_, POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, std::numeric_limits<int>::max())));
        if (r > 0) return;
        if (r < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
}

bool Channel::readable(int wait_ms) const {
    if (in_buffer_at_ < in_buffer_end_) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, wait_ms) > 0;
}

bool read_header(Channel& c, Frame& f) {
    std::uint8_t header[kHeaderBytes];
    if (!c.read_full(header, sizeof header)) return false;
    std::string problem;
    const auto decoded = decode_header(header, &problem);
    if (!decoded) throw std::runtime_error(problem);
    f = *decoded;
    return true;
}

bool read_frame(Channel& c, Frame& f, std::string& payload, std::size_t max_payload) {
    if (!read_header(c, f)) return false;
    if (f.length > max_payload)
        throw std::runtime_error("a frame of " + std::to_string(f.length) + " bytes, where at most " +
                                 std::to_string(max_payload) + " belong");
    read_payload(c, f, payload);
    return true;
}

void read_payload(Channel& c, const Frame& f, std::string& payload) {
    // The payload grows as its bytes arrive: a header that declares 64 MiB
    // and sends nothing costs nothing.
    payload.clear();
    constexpr std::size_t kPiece = 1u << 20;
    for (std::size_t got = 0; got < f.length;) {
        const std::size_t n = std::min<std::size_t>(kPiece, f.length - got);
        payload.resize(got + n);
        if (!c.read_full(payload.data() + got, n))
            throw std::runtime_error("the peer closed the connection in the middle of a frame");
        got += n;
    }
}

void write_frame(Channel& c, const Frame& f, const void* payload, std::size_t length) {
    Frame out = f;
    out.length = static_cast<std::uint32_t>(length);
    // A small frame goes out in one piece: one send, and one record when sealed.
    constexpr std::size_t kOnePiece = 16u << 10;
    if (length <= kOnePiece) {
        std::uint8_t bytes[kHeaderBytes + kOnePiece];
        encode_header(out, bytes);
        if (length) std::memcpy(bytes + kHeaderBytes, payload, length);
        return c.write_full(bytes, kHeaderBytes + length);
    }
    std::uint8_t header[kHeaderBytes];
    encode_header(out, header);
    c.write_full(header, sizeof header);
    c.write_full(payload, length);
}

bool read_frame(int fd, Frame& f, std::string& payload, std::size_t max_payload) {
    Channel plain = Channel::exact(fd);  // what follows the frame stays on the socket
    return read_frame(plain, f, payload, max_payload);
}

void write_frame(int fd, const Frame& f, const void* payload, std::size_t length) {
    Channel plain(fd);
    write_frame(plain, f, payload, length);
}

}  // namespace slabcast::mover
