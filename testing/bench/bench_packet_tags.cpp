// Which tag to put on every data packet (issue 59), measured on this machine
// before one is chosen: each candidate authenticates (or seals) one
// datagram's 8952 bytes of payload under a fresh nonce a packet, one core,
// against a memcpy of the same bytes (what placing a packet costs at the
// least). The control packets already carry an HMAC; a data packet at the
// paper's 2.81 Gbit/s a stream (Balman et al., 2012, section 4) is about
// 39,000 of these a second. Counters: GB_per_s of payload, and
// core_at_2.81G, the share of one core a stream at that rate costs.
//
//   build/testing/bench_packet_tags
#include "paper_rate.h"

#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t kPayload = 8952;

struct Packet {
    std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kPayload), out = std::vector<std::uint8_t>(kPayload + 64);
    std::uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                            17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
    std::uint8_t nonce[12] = {};
    std::uint8_t tag[64] = {};
    Packet() {
        for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 131 + 7);
    }
    // A new nonce a packet: the sequence number in its first 8 bytes.
    void next(std::uint64_t sequence) { std::memcpy(nonce, &sequence, 8); }
};

void report(benchmark::State& state) { slabcast::bench::count_bytes(state, kPayload, "GB_per_s"); }

void BM_memcpy(benchmark::State& state) {
    Packet p;
    for (auto _ : state) {
        std::memcpy(p.out.data(), p.bytes.data(), kPayload);
        benchmark::DoNotOptimize(p.out.data());
        benchmark::ClobberMemory();
    }
    report(state);
}

// OpenSSL's AEADs: with `seal` false the payload is only authenticated (as
// additional data: GMAC for AES-GCM, Poly1305 under a ChaCha20 one-time key),
// with `seal` true it is also encrypted. The context is made once and given a
// new nonce a packet, as a stream would.
void openssl_aead(benchmark::State& state, const EVP_CIPHER* cipher, bool seal) {
    Packet p;
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(ctx, cipher, nullptr, p.key, nullptr);
    std::uint64_t sequence = 0;
    int n = 0;
    for (auto _ : state) {
        p.next(++sequence);
        if (EVP_EncryptInit_ex(ctx, nullptr, nullptr, nullptr, p.nonce) != 1) state.SkipWithError("init");
        if (seal)
            EVP_EncryptUpdate(ctx, p.out.data(), &n, p.bytes.data(), static_cast<int>(kPayload));
        else
            EVP_EncryptUpdate(ctx, nullptr, &n, p.bytes.data(), static_cast<int>(kPayload));
        EVP_EncryptFinal_ex(ctx, p.out.data() + (seal ? n : 0), &n);
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, p.tag);
        benchmark::DoNotOptimize(p.tag);
    }
    EVP_CIPHER_CTX_free(ctx);
    report(state);
}
void BM_openssl_gmac(benchmark::State& s) { openssl_aead(s, EVP_aes_256_gcm(), false); }
void BM_openssl_aes256gcm_seal(benchmark::State& s) { openssl_aead(s, EVP_aes_256_gcm(), true); }
void BM_openssl_chacha_poly1305_tag(benchmark::State& s) { openssl_aead(s, EVP_chacha20_poly1305(), false); }
void BM_openssl_chacha_poly1305_seal(benchmark::State& s) { openssl_aead(s, EVP_chacha20_poly1305(), true); }

void BM_openssl_hmac_sha256(benchmark::State& state) {
    Packet p;
    unsigned int n = 0;
    std::uint64_t sequence = 0;
    for (auto _ : state) {
        p.next(++sequence);
        HMAC(EVP_sha256(), p.key, 32, p.bytes.data(), kPayload, p.tag, &n);
        benchmark::DoNotOptimize(p.tag);
    }
    report(state);
}

// libsodium's AEADs the same way: the payload as additional data, or sealed;
// `encrypt(p, message, message_bytes, extra, extra_bytes)` calls the one measured.
template <typename Encrypt>
void sodium_aead(benchmark::State& state, bool seal, Encrypt encrypt) {
    Packet p;
    std::uint64_t sequence = 0;
    const std::uint8_t* message = seal ? p.bytes.data() : nullptr;
    const std::uint8_t* extra = seal ? nullptr : p.bytes.data();
    for (auto _ : state) {
        p.next(++sequence);
        encrypt(p, message, seal ? kPayload : 0, extra, seal ? 0 : kPayload);
        benchmark::DoNotOptimize(p.tag);
    }
    report(state);
}
void sodium_aes256gcm(benchmark::State& state, bool seal) {
    if (!crypto_aead_aes256gcm_is_available()) {
        state.SkipWithError("no AES-NI and PCLMUL");
        return;
    }
    crypto_aead_aes256gcm_state ctx;
    crypto_aead_aes256gcm_beforenm(&ctx, Packet().key);
    sodium_aead(state, seal, [&](Packet& p, const std::uint8_t* m, std::size_t m_bytes, const std::uint8_t* ad, std::size_t ad_bytes) {
        unsigned long long n = 0;
        crypto_aead_aes256gcm_encrypt_detached_afternm(p.out.data(), p.tag, &n, m, m_bytes, ad, ad_bytes, nullptr, p.nonce, &ctx);
    });
}
void sodium_chacha_poly1305(benchmark::State& state, bool seal) {
    sodium_aead(state, seal, [](Packet& p, const std::uint8_t* m, std::size_t m_bytes, const std::uint8_t* ad, std::size_t ad_bytes) {
        unsigned long long n = 0;
        crypto_aead_chacha20poly1305_ietf_encrypt_detached(p.out.data(), p.tag, &n, m, m_bytes, ad, ad_bytes, nullptr, p.nonce,
                                                           p.key);
    });
}
void BM_sodium_aes256gcm_tag(benchmark::State& s) { sodium_aes256gcm(s, false); }
void BM_sodium_aes256gcm_seal(benchmark::State& s) { sodium_aes256gcm(s, true); }
void BM_sodium_chacha_poly1305_tag(benchmark::State& s) { sodium_chacha_poly1305(s, false); }
void BM_sodium_chacha_poly1305_seal(benchmark::State& s) { sodium_chacha_poly1305(s, true); }

// Keyed BLAKE2b (libsodium's generic hash), 16-byte tag; no nonce needed,
// the sequence number goes into the hashed bytes.
void BM_sodium_blake2b_keyed(benchmark::State& state) {
    Packet p;
    std::uint64_t sequence = 0;
    for (auto _ : state) {
        p.next(++sequence);
        std::memcpy(p.bytes.data(), p.nonce, 8);
        crypto_generichash(p.tag, 16, p.bytes.data(), kPayload, p.key, 32);
        benchmark::DoNotOptimize(p.tag);
    }
    report(state);
}

}  // namespace

BENCHMARK(BM_memcpy)->MinTime(0.5);
BENCHMARK(BM_openssl_gmac)->MinTime(0.5);
BENCHMARK(BM_sodium_aes256gcm_tag)->MinTime(0.5);
BENCHMARK(BM_openssl_chacha_poly1305_tag)->MinTime(0.5);
BENCHMARK(BM_sodium_chacha_poly1305_tag)->MinTime(0.5);
BENCHMARK(BM_sodium_blake2b_keyed)->MinTime(0.5);
BENCHMARK(BM_openssl_hmac_sha256)->MinTime(0.5);
BENCHMARK(BM_openssl_aes256gcm_seal)->MinTime(0.5);
BENCHMARK(BM_sodium_aes256gcm_seal)->MinTime(0.5);
BENCHMARK(BM_openssl_chacha_poly1305_seal)->MinTime(0.5);
BENCHMARK(BM_sodium_chacha_poly1305_seal)->MinTime(0.5);

int main(int argc, char** argv) {
    if (sodium_init() < 0) return 1;
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
