#include "codec_peers.h"

#include "slabcast/run_packet.h"

#include <lz4.h>
#include <zfp.h>
#include <zstd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>

namespace slabcast::bench {

const std::vector<std::string>& peer_names() {
    // Bit rounding loses about 6 dB of PSNR a bit dropped: 3 and 5 kept bits
    // land near quant:8's and quant:10's PSNR on the cosmology step, 7 near
    // quant:12's, and 10 and 12 below any quant error. zfp3d at the rates of
    // zfp:4 and zfp:8.
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const int keep : {3, 5, 7, 10, 12})
            for (const char* backend : {"lz4", "zstd"})
                v.push_back("bitround:" + std::to_string(keep) + "+shuffle+" + backend);
        v.insert(v.end(), {"zfp3d:4", "zfp3d:8"});
        return v;
    }();
    return names;
}

namespace {

// Kloewer et al. (2021), Methods: bit rounding is round to nearest with ties
// to even, by adding half an ulp of the kept bits (less one, plus the last
// kept bit) and masking what is dropped. A carry out of the mantissa raises
// the exponent, as rounding should (up to infinity from float32's largest
// values, as IEEE rounding would). NaN and infinity (exponent all ones) are
// left alone, so a NaN's payload cannot round into an infinity. Every rounded
// value is within half an ulp of its kept bits: a relative error of at most
// 2^-(keep+1), so the absolute error grows with the value.
inline std::uint32_t bitround(std::uint32_t u, int drop) {
    const std::uint32_t rounded = (u + ((1u << (drop - 1)) - 1) + ((u >> drop) & 1u)) & ~((1u << drop) - 1);
    return (u & 0x7f800000u) == 0x7f800000u ? u : rounded;
}

#if defined(__SSE2__)
// Byte planes of 16 values at a time with SSE2 (x86-64's baseline), as
// Blosc's shuffle does with SIMD (Alted, 2010), so the peer is not held back
// by its shuffle: on the benchmark's Xeon this rounds and shuffles a slab in
// about half the time of the scalar loop below (timed alone). Two 4x4
// transposes, each its own inverse: the bytes of every 4 values, then the
// 32-bit words (a byte plane's 4 values each) of 4 such groups.
inline __m128i transpose_bytes(__m128i a) {
    const __m128i t = _mm_unpacklo_epi8(a, _mm_srli_si128(a, 8));
    return _mm_unpacklo_epi8(t, _mm_srli_si128(t, 8));
}

inline void transpose_words(__m128i* x) {
    const __m128i u0 = _mm_unpacklo_epi32(x[0], x[1]), u1 = _mm_unpackhi_epi32(x[0], x[1]);
    const __m128i u2 = _mm_unpacklo_epi32(x[2], x[3]), u3 = _mm_unpackhi_epi32(x[2], x[3]);
    x[0] = _mm_unpacklo_epi64(u0, u2);
    x[1] = _mm_unpackhi_epi64(u0, u2);
    x[2] = _mm_unpacklo_epi64(u1, u3);
    x[3] = _mm_unpackhi_epi64(u1, u3);
}

// bitround() on 4 values.
inline __m128i bitround(__m128i u, int drop) {
    const __m128i ones = _mm_set1_epi32(1), exponent = _mm_set1_epi32(0x7f800000);
    const __m128i last_kept = _mm_and_si128(_mm_srl_epi32(u, _mm_cvtsi32_si128(drop)), ones);
    const __m128i half = _mm_set1_epi32(static_cast<int>((1u << (drop - 1)) - 1));
    const __m128i mask = _mm_set1_epi32(static_cast<int>(~((1u << drop) - 1)));
    const __m128i rounded = _mm_and_si128(_mm_add_epi32(_mm_add_epi32(u, half), last_kept), mask);
    const __m128i special = _mm_cmpeq_epi32(_mm_and_si128(u, exponent), exponent);
    return _mm_or_si128(_mm_and_si128(special, u), _mm_andnot_si128(special, rounded));
}
#endif

// Rounds and shuffles in one pass: value i's byte b goes to b * count + i, so
// LZ4's and zstd's matches find the planes of sign and exponent bytes, and the
// planes of mantissa bytes whose low bits rounding zeroed (Blosc's shuffle
// filter; Alted, 2010, Comput. Sci. Eng. 12(2), 68-71).
void round_shuffle(const float* values, std::size_t count, int drop, std::uint8_t* out) {
    std::size_t i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= count; i += 16) {
        __m128i x[4];
        for (int k = 0; k < 4; ++k) {
            const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values + i + 4 * k));
            x[k] = transpose_bytes(bitround(u, drop));
        }
        transpose_words(x);
        for (int b = 0; b < 4; ++b) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + b * count + i), x[b]);
    }
#endif
    for (; i < count; ++i) {
        std::uint32_t u;
        std::memcpy(&u, values + i, 4);
        u = bitround(u, drop);
        out[i] = static_cast<std::uint8_t>(u);
        out[count + i] = static_cast<std::uint8_t>(u >> 8);
        out[2 * count + i] = static_cast<std::uint8_t>(u >> 16);
        out[3 * count + i] = static_cast<std::uint8_t>(u >> 24);
    }
}

void unshuffle(const std::uint8_t* in, std::size_t count, float* values) {
    std::size_t i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= count; i += 16) {
        __m128i x[4];
        for (int b = 0; b < 4; ++b) x[b] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + b * count + i));
        transpose_words(x);
        for (int k = 0; k < 4; ++k)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(values + i + 4 * k), transpose_bytes(x[k]));
    }
#endif
    for (; i < count; ++i) {
        const std::uint32_t u = std::uint32_t{in[i]} | std::uint32_t{in[count + i]} << 8 |
                                std::uint32_t{in[2 * count + i]} << 16 | std::uint32_t{in[3 * count + i]} << 24;
        std::memcpy(values + i, &u, 4);
    }
}

// Pieces of run::kMaxValues values along the slab's linear index: what a
// codec-none run packet carries, each compressed on its own as a packet must.
class BitroundPeer : public CodecPeer {
public:
    enum class Backend { Lz4, Zstd };
    BitroundPeer(int keep, Backend backend, std::int64_t values)
        : drop_(23 - keep), backend_(backend), values_(values), shuffled_(kRun * sizeof(float)) {
        if (keep < 1 || keep > 22) throw std::invalid_argument("bitround keeps 1..22 mantissa bits");
        if (backend_ == Backend::Zstd && (!(cctx_ = ZSTD_createCCtx()) || !(dctx_ = ZSTD_createDCtx())))
            throw std::bad_alloc();
    }
    ~BitroundPeer() override {
        ZSTD_freeCCtx(cctx_);
        ZSTD_freeDCtx(dctx_);
    }
    BitroundPeer(const BitroundPeer&) = delete;
    BitroundPeer& operator=(const BitroundPeer&) = delete;

    std::size_t pieces() const override { return static_cast<std::size_t>((values_ + kRun - 1) / kRun); }
    std::size_t max_piece_bytes() const override {
        return backend_ == Backend::Lz4 ? static_cast<std::size_t>(LZ4_compressBound(kRun * 4))
                                        : ZSTD_compressBound(kRun * 4);
    }
    std::size_t encode(std::size_t i, const float* slab, std::uint8_t* out) override {
        const std::size_t n = count(i);
        round_shuffle(slab + i * kRun, n, drop_, shuffled_.data());
        const auto* src = reinterpret_cast<const char*>(shuffled_.data());
        if (backend_ == Backend::Lz4) {
            const int size = LZ4_compress_default(src, reinterpret_cast<char*>(out), static_cast<int>(4 * n),
                                                  static_cast<int>(max_piece_bytes()));
            if (size <= 0) throw std::runtime_error("LZ4_compress_default failed");
            return static_cast<std::size_t>(size);
        }
        // ZSTD_compress at level 1, with its context kept from piece to piece
        // as a sender would (ZSTD_compress makes and frees one every call):
        // the same bytes out.
        const std::size_t size = ZSTD_compressCCtx(cctx_, out, max_piece_bytes(), src, 4 * n, 1);
        if (ZSTD_isError(size)) throw std::runtime_error(std::string("ZSTD_compressCCtx: ") + ZSTD_getErrorName(size));
        return size;
    }
    bool decode(std::size_t i, const std::uint8_t* in, std::size_t bytes, float* slab) override {
        const std::size_t n = count(i);
        auto* dst = reinterpret_cast<char*>(shuffled_.data());
        if (backend_ == Backend::Lz4) {
            const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(in), dst, static_cast<int>(bytes),
                                                static_cast<int>(4 * n));
            if (got != static_cast<int>(4 * n)) return false;
        } else if (ZSTD_decompressDCtx(dctx_, dst, 4 * n, in, bytes) != 4 * n) {
            return false;
        }
        unshuffle(shuffled_.data(), n, slab + i * kRun);
        return true;
    }

private:
    static constexpr std::size_t kRun = run::kMaxValues;
    std::size_t count(std::size_t i) const {
        return std::min<std::size_t>(kRun, static_cast<std::size_t>(values_) - i * kRun);
    }
    int drop_;
    Backend backend_;
    std::int64_t values_;
    std::vector<std::uint8_t> shuffled_;
    ZSTD_CCtx* cctx_ = nullptr;
    ZSTD_DCtx* dctx_ = nullptr;
};

// Bricks of nx x 4 rows x 4 planes, rows fastest then planes; the last row
// or plane group may be thinner (zfp pads its partial blocks, so its bytes
// are a full brick's: a slab of 64 planes and a ghost codes its last plane as
// a layer of 4, about 5% more bytes). At fixed rate a brick is ceil(nx / 4) blocks of
// 64 * RATE bits: nx = 256, RATE 8 makes 4096 bytes for 4096 values, within
// one packet's payload up to RATE 17.
class Zfp3dPeer : public CodecPeer {
public:
    Zfp3dPeer(int rate, const Dims& dims, std::int64_t planes)
        : dims_(dims), planes_(planes), row_groups_((dims.ny + 3) / 4), stream_(zfp_stream_open(nullptr)),
          field_(zfp_field_alloc()) {
        if (!stream_ || !field_) throw std::bad_alloc();
        // Unaligned blocks: exactly 64 * rate bits each.
        zfp_stream_set_rate(stream_, rate, zfp_type_float, 3, zfp_false);
        zfp_field_set_type(field_, zfp_type_float);
        zfp_field_set_size_3d(field_, static_cast<std::size_t>(dims.nx), 4, 4);
        max_bytes_ = zfp_stream_maximum_size(stream_, field_);
        // Whole 64-bit words, which zfp's bit stream reads and writes.
        words_.resize(max_bytes_ / 8 + 2);
        bits_ = stream_open(words_.data(), words_.size() * 8);
        if (!bits_) throw std::bad_alloc();
        zfp_stream_set_bit_stream(stream_, bits_);
    }
    ~Zfp3dPeer() override {
        stream_close(bits_);
        zfp_field_free(field_);
        zfp_stream_close(stream_);
    }
    Zfp3dPeer(const Zfp3dPeer&) = delete;
    Zfp3dPeer& operator=(const Zfp3dPeer&) = delete;

    std::size_t pieces() const override { return static_cast<std::size_t>(row_groups_ * ((planes_ + 3) / 4)); }
    std::size_t max_piece_bytes() const override { return max_bytes_; }
    std::size_t encode(std::size_t i, const float* slab, std::uint8_t* out) override {
        attach(i, const_cast<float*>(slab));
        const std::size_t bytes = zfp_compress(stream_, field_);
        if (bytes == 0) throw std::runtime_error("zfp_compress failed");
        // As the project's zfp codec does: the aligned words into the packet.
        std::memcpy(out, words_.data(), bytes);
        return bytes;
    }
    bool decode(std::size_t i, const std::uint8_t* in, std::size_t bytes, float* slab) override {
        // A packet's payload is not word-aligned: copied to the words first,
        // zero-padded to a whole word, as the project's receiver does for zfp:RATE.
        if (bytes > max_bytes_) return false;
        std::memcpy(words_.data(), in, bytes);
        std::memset(reinterpret_cast<std::uint8_t*>(words_.data()) + bytes, 0, 8);
        attach(i, slab);
        return zfp_decompress(stream_, field_) != 0;
    }

private:
    // Points the field at brick i in place in the slab (the slab's strides:
    // zfp gathers and scatters the blocks itself) and rewinds the stream.
    void attach(std::size_t i, float* slab) {
        const auto r = static_cast<std::int64_t>(i) % row_groups_, p = static_cast<std::int64_t>(i) / row_groups_;
        const std::int64_t rows = std::min<std::int64_t>(4, dims_.ny - 4 * r);
        const std::int64_t planes = std::min<std::int64_t>(4, planes_ - 4 * p);
        zfp_field_set_pointer(field_, slab + (4 * p * dims_.ny + 4 * r) * dims_.nx);
        zfp_field_set_size_3d(field_, static_cast<std::size_t>(dims_.nx), static_cast<std::size_t>(rows),
                              static_cast<std::size_t>(planes));
        zfp_field_set_stride_3d(field_, 1, dims_.nx, dims_.plane());
        zfp_stream_rewind(stream_);
    }
    Dims dims_;
    std::int64_t planes_;
    std::int64_t row_groups_;
    zfp_stream* stream_;
    zfp_field* field_;
    bitstream* bits_ = nullptr;
    std::size_t max_bytes_ = 0;
    std::vector<std::uint64_t> words_;
};

}  // namespace

std::unique_ptr<CodecPeer> make_peer(const std::string& name, const Dims& dims, std::int64_t planes) {
    int n = 0;
    char backend[8] = {};
    int used = 0;
    if (std::sscanf(name.c_str(), "bitround:%d+shuffle+%7[a-z0-9]%n", &n, backend, &used) == 2 &&
        used == static_cast<int>(name.size())) {
        const std::string b = backend;
        using Backend = BitroundPeer::Backend;
        if (b == "lz4" || b == "zstd")
            return std::make_unique<BitroundPeer>(n, b == "lz4" ? Backend::Lz4 : Backend::Zstd, dims.plane() * planes);
    }
    if (std::sscanf(name.c_str(), "zfp3d:%d%n", &n, &used) == 1 && used == static_cast<int>(name.size()) && n >= 1 &&
        n <= 32)
        return std::make_unique<Zfp3dPeer>(n, dims, planes);
    throw std::invalid_argument("peer '" + name + "': expected bitround:N+shuffle+lz4|zstd or zfp3d:RATE");
}

}  // namespace slabcast::bench
