#include "slabcast/run_codec.h"

#include <lz4.h>
#include <zfp.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace slabcast::run {

CodecChoice parse_codec(const std::string& text) {
    if (text == "none") return {Codec::None, 0};
    if (text == "lz4") return {Codec::Lz4, 0};
    // NAME:N with N a whole number in [lo, hi], or why not.
    const auto numbered = [&](const char* name, Codec codec, int lo, int hi, const char* what) -> CodecChoice {
        const char* begin = text.data() + std::strlen(name) + 1;
        const char* end = text.data() + text.size();
        int n = 0;
        const auto [at, error] = std::from_chars(begin, end, n);
        if (error == std::errc() && at == end && n >= lo && n <= hi) return {codec, static_cast<std::uint16_t>(n)};
        throw std::invalid_argument("codec '" + text + "': " + name + "'s " + what + " is a whole number, " +
                                    std::to_string(lo) + " to " + std::to_string(hi));
    };
    if (text.rfind("zfp:", 0) == 0) return numbered("zfp", Codec::Zfp, kMinZfpRate, kMaxZfpRate, "rate (bits a value)");
    if (text.rfind("quant:", 0) == 0)
        return numbered("quant", Codec::Quant, kMinQuantBits, kMaxQuantBits, "precision (bits of levels)");
    throw std::invalid_argument("codec '" + text + "': expected none, lz4, zfp:RATE (e.g. zfp:8) or quant:BITS (e.g. quant:10)");
}

std::string to_string(const CodecChoice& c) {
    switch (c.codec) {
    case Codec::None: return "none";
    case Codec::Lz4: return "lz4";
    case Codec::Zfp: return "zfp:" + std::to_string(c.parameter);
    case Codec::Quant: return "quant:" + std::to_string(c.parameter);
    }
    return "unknown";
}

namespace {

// Byte shuffle: value i's byte b goes to b * count + i. Float32 values of a
// smooth field share their sign and exponent bytes, which LZ4 then finds as
// long repeats; raw, they are interleaved with the noisy low mantissa bytes.
void shuffle(const float* values, std::size_t count, std::uint8_t* out) {
    const auto* in = reinterpret_cast<const std::uint8_t*>(values);
    for (std::size_t i = 0; i < count; ++i)
        for (std::size_t b = 0; b < sizeof(float); ++b) out[b * count + i] = in[i * sizeof(float) + b];
}

void unshuffle(const std::uint8_t* in, std::size_t count, float* values) {
    auto* out = reinterpret_cast<std::uint8_t*>(values);
    for (std::size_t i = 0; i < count; ++i)
        for (std::size_t b = 0; b < sizeof(float); ++b) out[i * sizeof(float) + b] = in[b * count + i];
}

// A zfp stream in fixed-rate mode over a 1-D field, set up once and pointed
// at each packet's values and bytes in turn.
struct ZfpStream {
    zfp_stream* stream = zfp_stream_open(nullptr);
    zfp_field* field = zfp_field_alloc();
    bitstream* bits = nullptr;
    void* buffer = nullptr;  // what `bits` reads or writes
    std::size_t buffer_size = 0;

    explicit ZfpStream(int rate) {
        if (!stream || !field) throw std::bad_alloc();
        if (rate > 0) set_rate(rate);
    }
    ~ZfpStream() {
        if (bits) stream_close(bits);
        zfp_field_free(field);
        zfp_stream_close(stream);
    }
    ZfpStream(const ZfpStream&) = delete;
    ZfpStream& operator=(const ZfpStream&) = delete;

    void set_rate(int rate) {
        // Not word-aligned blocks: 4 * rate bits each, as zfp_payload_bytes counts.
        zfp_stream_set_rate(stream, rate, zfp_type_float, 1, zfp_false);
    }
    // Points the stream at `bytes` (8-byte aligned, `size` a multiple of 8:
    // whole words of any width the library may use) and the field at `count`
    // values. The bit stream is opened once for a buffer (stream_open
    // allocates), then only rewound, packet after packet.
    void attach(void* bytes, std::size_t size, float* values, std::size_t count) {
        if (!bits || bytes != buffer || size != buffer_size) {
            if (bits) stream_close(bits);
            bits = stream_open(bytes, size);
            if (!bits) throw std::bad_alloc();
            buffer = bytes;
            buffer_size = size;
            zfp_stream_set_bit_stream(stream, bits);
        }
        zfp_stream_rewind(stream);
        zfp_field_set_type(field, zfp_type_float);
        zfp_field_set_pointer(field, values);
        zfp_field_set_size_1d(field, count);
        zfp_field_set_stride_1d(field, 1);
    }
};

}  // namespace

struct RunEncoder::Zfp : ZfpStream {
    using ZfpStream::ZfpStream;
    std::vector<std::uint64_t> words = std::vector<std::uint64_t>(kMaxPayloadBytes / 8 + 2);
};

struct RunDecoder::Zfp : ZfpStream {
    Zfp() : ZfpStream(0) {}
    int rate = 0;
};

namespace {

// The most values of `choice` a payload of `capacity` bytes holds (codecs
// whose count a payload's size does not bound keep their own most).
int values_within(CodecChoice choice, std::size_t capacity) {
    switch (choice.codec) {
    case Codec::None: return static_cast<int>(capacity / sizeof(float));
    case Codec::Zfp: return static_cast<int>(capacity * 8 / (4 * std::uint64_t{choice.parameter}) * 4);  // whole blocks
    case Codec::Lz4:
    case Codec::Quant: return max_values(choice.codec, choice.parameter);
    }
    return 0;
}

}  // namespace

RunEncoder::RunEncoder(CodecChoice choice, std::size_t most_packet_bytes)
    : choice_(choice), payload_capacity_(most_packet_bytes - kHeaderBytes), max_values_(values_within(choice, payload_capacity_)) {
    if (run::max_values(choice.codec, choice.parameter) == 0) throw std::invalid_argument("codec " + to_string(choice) + " is not a codec");
    if (most_packet_bytes < kMinPacketBytes || most_packet_bytes > kMaxPacketBytes)
        throw std::invalid_argument("run packets of at most " + std::to_string(most_packet_bytes) + " bytes: expected " +
                                    std::to_string(kMinPacketBytes) + " to " + std::to_string(kMaxPacketBytes));
    if (choice.codec == Codec::Zfp) zfp_ = std::make_unique<Zfp>(choice.parameter);
    if (choice.codec == Codec::Lz4) {
        lz4_bound_ = LZ4_compressBound(static_cast<int>(sizeof(float)) * kMaxLz4Values);
        // Shuffled values, then two compressed candidates.
        scratch_.resize(sizeof(float) * kMaxLz4Values + 2 * static_cast<std::size_t>(lz4_bound_));
    }
}
RunEncoder::~RunEncoder() = default;
RunEncoder::RunEncoder(RunEncoder&&) noexcept = default;
RunEncoder& RunEncoder::operator=(RunEncoder&&) noexcept = default;

std::size_t RunEncoder::fixed_packet_bytes() const {
    switch (choice_.codec) {
    case Codec::None: return packet_bytes(max_values_);
    case Codec::Zfp: return kHeaderBytes + zfp_payload_bytes(max_values_, choice_.parameter);
    case Codec::Lz4:
    case Codec::Quant: return 0;
    }
    return 0;
}

RunEncoder::Packet RunEncoder::encode(const float* values, std::int64_t available, Header h, std::uint8_t* packet) {
    const auto take = [&](int most) { return static_cast<int>(std::min<std::int64_t>(available, most)); };
    h.codec = choice_.codec;
    h.codec_parameter = choice_.parameter;
    switch (choice_.codec) {
    case Codec::Quant: {
        std::uint8_t* payload = packet + kHeaderBytes;
        const QuantPacket q = quant_encode(values, available, choice_.parameter, payload, payload_capacity_);
        if (q.count > 0) {
            h.count = q.count;
            h.payload_bytes = static_cast<std::uint32_t>(q.bytes);
            write_header(packet, h);
            return {q.count, kHeaderBytes + q.bytes};
        }
        break;  // a first value that is not finite: raw, below
    }
    case Codec::Zfp: {
        h.count = take(max_values());
        const std::uint64_t bytes = zfp_payload_bytes(h.count, choice_.parameter);
        zfp_->attach(zfp_->words.data(), zfp_->words.size() * 8, const_cast<float*>(values),
                     static_cast<std::size_t>(h.count));
        // zfp pads the stream to its word: the bytes past `bytes` are that padding.
        const std::size_t written = zfp_compress(zfp_->stream, zfp_->field);
        if (written < bytes || written >= bytes + 8)
            throw std::logic_error("zfp wrote " + std::to_string(written) + " bytes, expected " + std::to_string(bytes));
        h.payload_bytes = static_cast<std::uint32_t>(bytes);
        std::memcpy(write_header(packet, h), zfp_->words.data(), bytes);
        return {h.count, kHeaderBytes + bytes};
    }
    case Codec::Lz4: {
        // Guess from the last packet's ratio how many values fit, compress,
        // then take fewer while they do not fit, or more while the packet is
        // well under full (a few tries at most; a margin keeps them rare).
        const int capacity = static_cast<int>(payload_capacity_), raw_most = max_raw_values();
        const int most = take(kMaxLz4Values);
        int count = std::min(most, std::max(raw_most, static_cast<int>(lz4_ratio_ * 0.97 * capacity / sizeof(float))));
        int best_count = 0, best_size = 0;
        char* best = reinterpret_cast<char*>(scratch_.data() + sizeof(float) * kMaxLz4Values);
        char* trying = best + lz4_bound_;
        for (int attempt = 0; attempt < 4 && count > best_count; ++attempt) {
            const int raw = static_cast<int>(sizeof(float)) * count;
            shuffle(values, static_cast<std::size_t>(count), scratch_.data());
            const int size = LZ4_compress_default(reinterpret_cast<const char*>(scratch_.data()), trying, raw, lz4_bound_);
            if (size > 0 && size <= capacity && size < raw) {
                std::swap(best, trying);
                best_count = count;
                best_size = size;
                if (size >= capacity * 9 / 10 || count == most) break;
                count = std::min(most, static_cast<int>(static_cast<double>(count) * capacity / size * 0.97));
            } else {
                // Raw values would be no bigger, or it did not fit: fewer, in proportion.
                if (best_count > 0 || count <= raw_most || size <= 0 || size >= raw) break;
                count = std::max(raw_most, static_cast<int>(static_cast<double>(count) * capacity / size * 0.97));
            }
        }
        if (best_count > 0) {
            lz4_ratio_ = static_cast<double>(sizeof(float)) * best_count / best_size;
            h.count = best_count;
            h.payload_bytes = static_cast<std::uint32_t>(best_size);
            std::memcpy(write_header(packet, h), best, static_cast<std::size_t>(best_size));
            return {best_count, kHeaderBytes + static_cast<std::size_t>(best_size)};
        }
        lz4_ratio_ = 1.0;
        break;
    }
    case Codec::None: break;
    }
    h.codec = Codec::None;
    h.codec_parameter = 0;
    h.count = take(max_raw_values());
    h.payload_bytes = 0;
    const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(h.count);
    std::memcpy(write_header(packet, h), values, bytes);
    return {h.count, kHeaderBytes + bytes};
}

RunDecoder::RunDecoder()
    : zfp_(std::make_unique<Zfp>()),
      values_(static_cast<std::size_t>(
          std::max({max_values(Codec::Zfp, kMinZfpRate), kMaxLz4Values, kMaxQuantValues}))),
      bytes_(std::max<std::size_t>(sizeof(float) * kMaxLz4Values, kMaxPayloadBytes + 16)) {}
RunDecoder::~RunDecoder() = default;
RunDecoder::RunDecoder(RunDecoder&&) noexcept = default;
RunDecoder& RunDecoder::operator=(RunDecoder&&) noexcept = default;

const float* RunDecoder::decode(const Header& h, const std::uint8_t* payload) {
    const auto count = static_cast<std::size_t>(h.count);
    switch (h.codec) {
    case Codec::None:
        // Unaligned in the datagram: the receiver copies it out with memcpy.
        return reinterpret_cast<const float*>(payload);
    case Codec::Lz4: {
        const int raw = static_cast<int>(sizeof(float) * count);
        const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(payload), reinterpret_cast<char*>(bytes_.data()),
                                            static_cast<int>(h.payload_bytes), raw);
        if (got != raw) return nullptr;
        unshuffle(bytes_.data(), count, values_.data());
        return values_.data();
    }
    case Codec::Zfp: {
        // The bit stream reads 64-bit words: the payload goes to an aligned
        // buffer first, zero-padded to a whole word (parse_header fixed its
        // size from count and rate, so zfp reads exactly these bytes).
        const std::size_t size = h.payload_bytes;
        std::memcpy(bytes_.data(), payload, size);
        std::memset(bytes_.data() + size, 0, 16);
        if (zfp_->rate != h.codec_parameter) {
            zfp_->set_rate(h.codec_parameter);
            zfp_->rate = h.codec_parameter;
        }
        // The whole buffer, for every packet: fixed rate, zfp reads exactly the payload's blocks.
        zfp_->attach(bytes_.data(), bytes_.size() / 8 * 8, values_.data(), count);
        if (zfp_decompress(zfp_->stream, zfp_->field) == 0) return nullptr;
        return values_.data();
    }
    case Codec::Quant:
        return quant_decode(payload, h.payload_bytes, h.count, h.codec_parameter, values_.data()) ? values_.data()
                                                                                                  : nullptr;
    }
    return nullptr;
}

}  // namespace slabcast::run
