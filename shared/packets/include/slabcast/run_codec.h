// Codecs for run packets' payloads (docs/wire-format.md, "Codecs"). Every
// packet decodes on its own, so a lost packet loses its own values and nothing
// else: the receiver's hole rules handle it as for raw runs. The paper's
// stream sent raw values (Balman et al., 2012, section 4.2); a codec trades
// CPU on both ends for values per wire byte.
//
//   none      float32 values as they are (4 bytes a value).
//   lz4       lossless: the run's bytes shuffled (all first bytes, then all
//             second bytes, ...) and LZ4-compressed; as many values as fit.
//   zfp:RATE  lossy, ZFP fixed rate: RATE bits a value, 1-D blocks of 4 values
//             along the run, so a packet is still one range of the slab's
//             linear index and its size is known from its count.
//   quant:BITS lossy, fast: 2^BITS levels over the packet's range, differences
//             bit-packed (slabcast/quant_codec.h); within half a level of
//             the original. A run with a NaN or an infinity goes out raw.
#pragma once

#include "slabcast/run_packet.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace slabcast::run {

struct CodecChoice {
    Codec codec = Codec::None;
    std::uint16_t parameter = 0;  // zfp: bits a value; quant: bits of levels
};

// "none", "lz4", "zfp:RATE" (RATE 4..32) or "quant:BITS" (BITS 4..16);
// throws std::invalid_argument naming what is wrong.
CodecChoice parse_codec(const std::string& text);
std::string to_string(const CodecChoice& c);

// Builds payloads on the sending side, one packet at a time.
class RunEncoder {
public:
    // Packets of at most `most_packet_bytes` (forward error correction sends
    // shorter ones: slabcast/fec_packet.h). Throws std::invalid_argument for a
    // codec that is not one, or a size outside kMinPacketBytes..kMaxPacketBytes.
    static constexpr std::size_t kMinPacketBytes = 1024;
    explicit RunEncoder(CodecChoice choice, std::size_t most_packet_bytes = kMaxPacketBytes);
    ~RunEncoder();
    RunEncoder(RunEncoder&&) noexcept;
    RunEncoder& operator=(RunEncoder&&) noexcept;

    struct Packet {
        int count = 0;            // values taken from the front of `values`
        std::size_t bytes = 0;    // the whole packet, header included
    };
    // Writes one packet holding as many of `values[0..available)` as fit
    // (`available` >= 1) into `packet` (room for most_packet_bytes). `h` gives
    // step, slab and the first voxel; count, codec and payload size are the
    // encoder's. An lz4 run that does not compress goes out as codec none, as
    // does a quant run that begins with a value that is not finite.
    Packet encode(const float* values, std::int64_t available, Header h, std::uint8_t* packet);

    CodecChoice choice() const { return choice_; }
    // The size of a full packet when every full packet has the same size
    // (none, zfp: GSO can send them as one), 0 when sizes vary (lz4, quant).
    std::size_t fixed_packet_bytes() const;
    // Values a packet carries at most.
    int max_values() const { return max_values_; }
    // Values a packet of raw values (codec none) carries at most: an lz4 run
    // that does not compress goes out so.
    int max_raw_values() const { return static_cast<int>(payload_capacity_ / sizeof(float)); }

private:
    struct Zfp;
    CodecChoice choice_;
    std::size_t payload_capacity_;  // most_packet_bytes less the header
    int max_values_;
    std::unique_ptr<Zfp> zfp_;
    std::vector<std::uint8_t> scratch_;  // lz4: shuffled bytes, then the compressed payload
    double lz4_ratio_ = 1.0;             // the last packet's, to guess the next count
    int lz4_bound_ = 0;                  // LZ4's worst case for the most values a packet takes
};

// Decodes payloads on the receiving side; one per stream (not thread-safe).
class RunDecoder {
public:
    RunDecoder();
    ~RunDecoder();
    RunDecoder(RunDecoder&&) noexcept;
    RunDecoder& operator=(RunDecoder&&) noexcept;

    // The run's `h.count` values from a packet whose header parse_header
    // accepted, or nullptr when the payload does not decode to exactly that
    // many (lz4). Codec none points into the packet; the others into this
    // decoder's buffer, valid until the next call.
    const float* decode(const Header& h, const std::uint8_t* payload);

private:
    struct Zfp;
    std::unique_ptr<Zfp> zfp_;
    std::vector<float> values_;
    std::vector<std::uint8_t> bytes_;  // lz4: shuffled bytes; zfp: the payload, word-aligned
};

}  // namespace slabcast::run
