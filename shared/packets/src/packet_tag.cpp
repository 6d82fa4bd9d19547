#include "slabcast/packet_tag.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sodium.h>

#include <cstring>
#include <stdexcept>
#include <utility>

namespace slabcast::tag {

namespace {

constexpr char kContext[] = "slabcast data key v1";

std::uint64_t read_u64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    std::memcpy(&v, p, 8);
    return v;
}

}  // namespace

Key derive(const Key& shared, std::uint32_t stream, std::uint64_t session) {
    std::uint8_t input[sizeof kContext + 4 + 8];
    std::memcpy(input, kContext, sizeof kContext);
    std::memcpy(input + sizeof kContext, &stream, 4);
    std::memcpy(input + sizeof kContext + 4, &session, 8);
    Key out{};
    if (crypto_generichash(out.data(), out.size(), input, sizeof input, shared.data(), shared.size()) != 0)
        throw std::runtime_error("packet tag: deriving a stream's key failed");
    return out;
}

struct Gmac::Context {
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    ~Context() { EVP_CIPHER_CTX_free(ctx); }
};

Gmac::Gmac(const Key& key) : context_(std::make_unique<Context>()) {
    if (!context_->ctx || EVP_EncryptInit_ex(context_->ctx, EVP_aes_256_gcm(), nullptr, key.data(), nullptr) != 1)
        throw std::runtime_error("packet tag: OpenSSL's AES-256-GCM did not start");
}

Gmac::~Gmac() = default;

void Gmac::rekey(const Key& key) {
    if (EVP_EncryptInit_ex(context_->ctx, nullptr, nullptr, key.data(), nullptr) != 1)
        throw std::runtime_error("packet tag: OpenSSL's AES-256-GCM took no key");
}

void Gmac::tag(const std::uint8_t* bytes, std::size_t length, std::uint64_t sequence, std::uint8_t out[kTagBytes]) {
    // The nonce: the sequence number, then four zero bytes (GCM's 96 bits).
    std::uint8_t nonce[12] = {};
    std::memcpy(nonce, &sequence, 8);
    int n = 0;
    EVP_CIPHER_CTX* c = context_->ctx;
    if (EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, nonce) != 1 ||
        EVP_EncryptUpdate(c, nullptr, &n, bytes, static_cast<int>(length)) != 1 ||
        EVP_EncryptFinal_ex(c, nullptr, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagBytes), out) != 1)
        throw std::runtime_error("packet tag: OpenSSL's GMAC failed");
}

Tagger::Tagger(const Key& shared, std::uint32_t stream, std::uint64_t session)
    : session_(session), gmac_(derive(shared, stream, session)) {}

std::size_t Tagger::seal(std::uint8_t* datagram, std::size_t length) {
    std::uint8_t* trailer = datagram + length;
    std::memcpy(trailer, &session_, 8);
    std::memcpy(trailer + 8, &sequence_, 8);
    // The tag covers the datagram and the trailer's session and sequence.
    gmac_.tag(datagram, length + 16, sequence_, trailer + 16);
    ++sequence_;
    return length + kTrailerBytes;
}

const char* to_string(Verdict v) {
    switch (v) {
        case Verdict::Ok: return "ok";
        case Verdict::TooShort: return "too short for a tag";
        case Verdict::BadTag: return "bad tag";
        case Verdict::Replayed: return "replayed";
        case Verdict::TooOld: return "too old";
    }
    return "?";
}

Verdict ReplayWindow::judge(std::uint64_t sequence) const {
    if (!any_ || sequence > newest_) return Verdict::Ok;
    if (newest_ - sequence >= kWidth) return Verdict::TooOld;
    const std::uint64_t bit = sequence % kWidth;
    return (seen_[bit / 64] >> (bit % 64)) & 1u ? Verdict::Replayed : Verdict::Ok;
}

void ReplayWindow::take(std::uint64_t sequence) {
    if (!any_) {
        any_ = true;
        newest_ = sequence;
        seen_.fill(0);
    } else if (sequence > newest_) {
        // The bits of the numbers passed over are cleared: they were not seen.
        if (sequence - newest_ >= kWidth) {
            seen_.fill(0);
        } else {
            for (std::uint64_t s = newest_ + 1; s < sequence; ++s) {
                const std::uint64_t bit = s % kWidth;
                seen_[bit / 64] &= ~(std::uint64_t{1} << (bit % 64));
            }
        }
        newest_ = sequence;
    }
    const std::uint64_t bit = sequence % kWidth;
    seen_[bit / 64] |= std::uint64_t{1} << (bit % 64);
}

void ReplayWindow::reset() {
    any_ = false;
    newest_ = 0;
    seen_.fill(0);
}

Checker::Checker(const Key& shared, std::uint32_t stream)
    : shared_(shared), stream_(stream), gmac_(std::make_unique<Gmac>(Key{})), offered_gmac_(std::make_unique<Gmac>(Key{})) {}

Checker::~Checker() = default;

Verdict Checker::check(const std::uint8_t* datagram, std::size_t length, std::size_t& payload_length) {
    if (length < kTrailerBytes) return Verdict::TooShort;
    const std::size_t payload = length - kTrailerBytes;
    const std::uint8_t* trailer = datagram + payload;
    const std::uint64_t session = read_u64(trailer), sequence = read_u64(trailer + 8);
    if (receiving_ && session < session_) return Verdict::TooOld;
    Gmac* gmac = gmac_.get();
    const bool newer = !receiving_ || session > session_;
    if (newer) {
        if (!offered_keyed_ || session != offered_) {
            offered_gmac_->rekey(derive(shared_, stream_, session));
            offered_ = session;
            offered_keyed_ = true;
        }
        gmac = offered_gmac_.get();
    } else {
        const Verdict seen = window_.judge(sequence);
        if (seen != Verdict::Ok) return seen;
    }
    std::uint8_t expected[kTagBytes];
    gmac->tag(datagram, payload + 16, sequence, expected);
    if (CRYPTO_memcmp(expected, trailer + 16, kTagBytes) != 0) return Verdict::BadTag;
    if (newer) {  // proven: the stream's first session, or its sender started again
        std::swap(gmac_, offered_gmac_);
        offered_keyed_ = false;
        receiving_ = true;
        session_ = session;
        window_.reset();
    }
    window_.take(sequence);
    payload_length = payload;
    return Verdict::Ok;
}

}  // namespace slabcast::tag
