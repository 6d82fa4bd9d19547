// One TCP stream of the data mover as the transfers read and write it: the
// socket itself, or, when the handshake agreed on encryption (auth.h), a
// sequence of sealed records, each an AEAD of up to 256 KiB under this
// direction's session key:
//
//   u32 little-endian: n, the sealed bytes that follow (ciphertext + 16-byte tag)
//   n bytes: AEAD(key, nonce = the record's number in this direction, ad = the 4 bytes above)
//
// AES-256-GCM where both ends' CPUs have AES-NI, XChaCha20-Poly1305
// otherwise (libsodium). The nonce is never sent: each end counts records, so
// a record changed, dropped, repeated or moved fails its tag, and the
// transfer's own frames (Done, Bye, Report) end each stream inside the seal.
#pragma once

#include "mover/wire.h"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace slabcast::mover {

enum class Cipher : std::uint8_t { None, Aes256Gcm, XChaCha20Poly1305 };
const char* to_string(Cipher c);

// This end's keys for one connection (auth.h derives them from the key file
// and both nonces): one for what it sends, one for what it receives.
struct SessionKeys {
    Cipher cipher = Cipher::None;
    std::array<std::uint8_t, 32> send{}, receive{};
};

// Plaintext bytes in one sealed record, at most.
inline constexpr std::size_t kSealedRecord = 256u << 10;

class Channel {
public:
    explicit Channel(int fd);  // plaintext: straight to the socket, as read_full/write_full
    // Plaintext, and reading no byte beyond what each read asks (no
    // in_buffer_): for one frame read off a socket that is read otherwise
    // afterwards (a handshake's frames, before the stream's own channel).
    static Channel exact(int fd);
    Channel(int fd, const SessionKeys& keys);  // sealed when keys.cipher is not None
    Channel(Channel&&) noexcept;
    Channel& operator=(Channel&&) noexcept;
    ~Channel();

    int fd() const { return fd_; }
    Cipher cipher() const;

    // As read_full/write_full (stream_io.h). One reader and one writer may use
    // a channel at the same time: each direction keeps its own state.
    bool read_full(void* buf, std::size_t n);
    void write_full(const void* buf, std::size_t n, bool more = false);  // `more`: MSG_MORE when plaintext
    // stream_io.h's send_file; sealed, the bytes are read and sealed.
    void send_file(int file, std::uint64_t offset, std::size_t length);
    // Bytes that can be read now without waiting (for a sealed channel, what
    // is left of the last record and about what is on the socket).
    std::size_t waiting() const;
    // Takes up to `most` bytes of what the socket holds now into a buffer
    // that the reads above then drain first, so that a stream whose frames
    // cannot be judged yet is still read, and TCP's windows open as they
    // would. Returns the bytes taken (0: none there), or nullopt once the
    // peer closed or failed (the reads meet that after the held bytes).
    std::optional<std::size_t> read_ahead(std::size_t most);
    // Whether the socket has something to read (or its end), waiting up to `wait_ms`.
    bool readable(int wait_ms) const;
    // Until cleared (nullopt), every read from the socket waits for its bytes
    // only until `deadline` and then throws DeadlinePassed: a whole exchange
    // bounded, not each recv (SO_RCVTIMEO), which a peer sending a byte
    // now and then would hold open for ever. Bytes held already are read.
    void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) { deadline_ = deadline; }

private:
    class Seal;
    std::optional<std::size_t> read_record(std::uint8_t* room, std::size_t room_bytes);
    // The socket's bytes in order: what in_buffer_ holds, then read_ahead's,
    // then the socket (a small read through in_buffer_, a large one straight
    // into `buf`).
    bool socket_read_full(void* buf, std::size_t n);
    std::size_t take_buffered(std::uint8_t* to, std::size_t n);
    // With a deadline: waits for the socket to be readable, throwing
    // DeadlinePassed once the deadline has passed.
    void await_deadline() const;

    int fd_ = -1;
    std::optional<std::chrono::steady_clock::time_point> deadline_;
    std::unique_ptr<Seal> out_, in_;
    std::vector<std::uint8_t> out_record_, in_record_, in_plain_;
    std::size_t in_at_ = 0;  // in_plain_ read so far
    // Socket bytes read_ahead took, as they came (sealed or not), a piece per
    // read: no buffer grows by copying, and what is held is what was read.
    std::deque<std::vector<std::uint8_t>> ahead_;
    std::size_t ahead_at_ = 0;  // of ahead_.front(), read so far
    std::size_t ahead_bytes_ = 0;  // held in ahead_, not read yet
    // A read smaller than kDirectRead (a frame's header, a small file's
    // payload, a sealed record's length) is served from in_buffer_, filled by
    // one recv of whatever the socket holds, up to kInBuffer: ten thousand
    // small files were 36,000 recv calls, a third of what the receiving end
    // spent in recv beyond what iperf3 spends for the same bytes
    // (docs/performance.md, "Mover"). Allocated at the first small read.
    static constexpr std::size_t kInBuffer = 64u << 10, kDirectRead = 16u << 10;
    std::size_t direct_read_ = kDirectRead;  // 0: exact()
    std::unique_ptr<std::uint8_t[]> in_buffer_;
    std::size_t in_buffer_at_ = 0, in_buffer_end_ = 0;
};

// Whole frames on a plaintext socket (a channel without a seal).
// Reads one frame: header (checked) and payload, at most `max_payload`. The
// payload grows as its bytes arrive, so a header that declares 64 MiB and
// sends nothing costs nothing. false on EOF at a frame boundary. Throws
// std::runtime_error on anything else.
bool read_frame(int fd, Frame& f, std::string& payload, std::size_t max_payload = kMaxPayload);
void write_frame(int fd, const Frame& f, const void* payload = nullptr, std::size_t length = 0);

// Whole frames through a channel, sealed or not.
bool read_frame(Channel& c, Frame& f, std::string& payload, std::size_t max_payload = kMaxPayload);
// read_frame in two steps, for a caller that judges the header (its kind and
// length) before a byte of the payload is read: the header (false on an
// orderly end before it), then the payload it declares, grown as it arrives.
bool read_header(Channel& c, Frame& f);
void read_payload(Channel& c, const Frame& f, std::string& payload);
void write_frame(Channel& c, const Frame& f, const void* payload = nullptr, std::size_t length = 0);

}  // namespace slabcast::mover
