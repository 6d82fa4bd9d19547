// The order in which a shuffler walks its slab: z-slab scan order (x fastest,
// so each packet is one contiguous run and the receiver's stores are
// sequential) or z-order (Morton) over the slab, the paper's alternative
// (Balman et al., 2012, section 4.2).
#pragma once

#include "slabcast/run_codec.h"
#include "slabcast/volume.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slabcast {

enum class SendOrder { Scan, Morton };
SendOrder parse_send_order(const std::string& text);  // "scan" | "morton"

// The data packets' format (docs/wire-format.md): the paper's quad packets, or
// run packets (a contiguous run of the slab's values, its first voxel once).
enum class WireFormat { Quad, Run };
WireFormat parse_wire_format(const std::string& text);  // "quad" | "run"

class SlabWalker {
public:
    // Walks planes [z_begin, z_end) of a volume of `dims`, in `wire` packets,
    // run packets' payloads in `codec`. Run packets follow scan order only, and
    // a codec other than none needs run packets (throws std::invalid_argument).
    SlabWalker(const Dims& dims, std::int64_t z_begin, std::int64_t z_end, SendOrder order,
               WireFormat wire = WireFormat::Quad, run::CodecChoice codec = {});

    void reset();
    // Quad packets: packs up to 560 records (coordinates + values read from the
    // whole-volume array `volume`) after the header of `packet`; returns how
    // many, 0 at the end. The caller writes the header.
    int fill(std::uint8_t* packet, const float* volume);
    // Run packets: the next run (as many values as the codec fits) as a whole
    // packet of step `step` for slab `slab`, header included; its count and
    // size, count 0 at the end.
    run::RunEncoder::Packet fill_run(std::uint8_t* packet, const float* volume, std::int32_t step, std::int32_t slab);

    std::uint64_t total_records() const { return total_; }
    // Packets a step takes (lz4: at most, as it depends on the values).
    std::uint64_t total_packets() const;
    // Run packets: a full packet's size when all have one (GSO can send them
    // together), 0 when sizes vary (lz4).
    std::size_t fixed_packet_bytes() const;

private:
    struct Node {
        std::int32_t x, y, z, size;
    };
    int fill_scan(std::uint8_t* packet, const float* volume);
    int fill_morton(std::uint8_t* packet, const float* volume);

    Dims dims_;
    std::int64_t z_begin_, z_end_;
    SendOrder order_;
    WireFormat wire_;
    std::optional<run::RunEncoder> encoder_;  // run packets
    std::uint64_t total_;
    std::int64_t next_linear_ = 0;  // scan order: next index from the first plane
    std::vector<Node> stack_;       // morton order: octree nodes still to visit
};

}  // namespace slabcast
