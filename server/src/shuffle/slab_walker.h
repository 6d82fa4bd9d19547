// The order in which a shuffler walks its slab: z-slab scan order (x fastest,
// so each packet is one contiguous run and the receiver's stores are
// sequential) or z-order (Morton) over the slab, the paper's alternative
// (Balman et al., 2012, section 4.2).
#pragma once

#include "slabcast/volume.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace slabcast {

enum class SendOrder { Scan, Morton };
SendOrder parse_send_order(const std::string& text);  // "scan" | "morton"

class SlabWalker {
public:
    // Walks planes [z_begin, z_end) of a volume of `dims`.
    SlabWalker(const Dims& dims, std::int64_t z_begin, std::int64_t z_end, SendOrder order);

    void reset();
    // Packs up to 560 records (coordinates + values read from the whole-volume
    // array `volume`) after the header of `packet`; returns how many, 0 at the end.
    int fill(std::uint8_t* packet, const float* volume);

    std::uint64_t total_records() const { return total_; }
    std::uint64_t total_packets() const;

private:
    struct Node {
        std::int32_t x, y, z, size;
    };
    int fill_scan(std::uint8_t* packet, const float* volume);
    int fill_morton(std::uint8_t* packet, const float* volume);

    Dims dims_;
    std::int64_t z_begin_, z_end_;
    SendOrder order_;
    std::uint64_t total_;
    std::int64_t next_linear_ = 0;  // scan order: next index from the first plane
    std::vector<Node> stack_;       // morton order: octree nodes still to visit
};

}  // namespace slabcast
