// The order in which a shuffler walks its slab: z-slab scan order (x fastest,
// so each packet is one contiguous run and the receiver's stores are
// sequential), z-order (Morton) over the slab, the paper's alternative
// (Balman et al., 2012, section 4.2), or the progressive order, coarse first,
// row by row (slabcast/progressive_rows.h), so that a step cut short still
// covers the whole slab.
#pragma once

#include "shuffle/morton_walk.h"
#include "slabcast/progressive_rows.h"
#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"
#include "slabcast/send_order.h"
#include "slabcast/volume.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace slabcast {

class DatagramBatch;

// The data packets' format (docs/wire-format.md): the paper's quad packets, or
// run packets (a contiguous run of the slab's values, its first voxel once).
enum class WireFormat { Quad, Run };
WireFormat parse_wire_format(const std::string& text);  // "quad" | "run"

class SlabWalker {
public:
    // Walks planes [z_begin, z_end) of a volume of `dims`, in `wire` packets,
    // run packets' payloads in `codec`; the first `ghost_planes` of them are
    // the slab's ghost plane (the progressive order sends those rows last);
    // packets of at most `most_packet_bytes` (shorter with forward error
    // correction: slabcast/fec_packet.h). A codec other than none needs run
    // packets (throws std::invalid_argument).
    SlabWalker(const Dims& dims, std::int64_t z_begin, std::int64_t z_end, SendOrder order,
               WireFormat wire = WireFormat::Quad, run::CodecChoice codec = {}, std::int64_t ghost_planes = 0,
               std::size_t most_packet_bytes = quad::kMaxPacketBytes);

    void reset();
    // A recorded step's losses (`slabcast replay --losses`): values whose age
    // in `ages` (one byte a walked value, valid until the next reset) is not 0
    // did not arrive in the recording and are not sent, so the receiver loses
    // exactly those. nullptr: every value is sent. Run packets in scan order
    // only (throws std::logic_error otherwise).
    void skip_lost(const std::uint8_t* ages);
    // Quad packets: packs up to 560 records (fewer in a shorter packet) (coordinates + values read from
    // `planes`, the walked planes [z_begin, z_end) in x-fastest order) after
    // the header of `packet`; returns how many, 0 at the end. The caller
    // writes the header.
    int fill_planes(std::uint8_t* packet, const float* planes);
    // Run packets: the next run (as many values as the codec fits) as a whole
    // packet of step `step` for slab `slab`, header included; its count and
    // size, count 0 at the end.
    run::RunEncoder::Packet fill_run_planes(std::uint8_t* packet, const float* planes, std::int32_t step,
                                            std::int32_t slab);
    // The same from `volume`, the whole volume's array.
    int fill(std::uint8_t* packet, const float* volume) { return fill_planes(packet, volume + first_value()); }
    run::RunEncoder::Packet fill_run(std::uint8_t* packet, const float* volume, std::int32_t step, std::int32_t slab) {
        return fill_run_planes(packet, volume + first_value(), step, slab);
    }
    // The next packet of step `step` in the walker's wire format, header
    // included, at `packet` (room for most_packet_bytes): its count of
    // values and size, count 0 at the step's end.
    run::RunEncoder::Packet pack(std::uint8_t* packet, const float* planes, std::int32_t step, std::int32_t slab);
    // `batch` emptied and packed (pack()) until it is full or the step is out:
    // the values it holds, and whether the step is out (its last packet in it).
    struct Filled {
        std::uint64_t values = 0;
        bool last = false;
    };
    Filled fill_batch(DatagramBatch& batch, const float* planes, std::int32_t step, std::int32_t slab);

    std::uint64_t total_records() const { return total_; }
    // Packets a step takes (lz4: at most, as it depends on the values).
    std::uint64_t total_packets() const;
    // Run packets: a full packet's size when all have one (GSO can send them
    // together), 0 when sizes vary (lz4).
    std::size_t fixed_packet_bytes() const;

    // Run packets in Morton order: a packet is one range of the slab's linear
    // index, so it holds several rows only when they are whole rows of one
    // plane. The slab is cut into tiles that are such ranges (as many whole
    // rows of a plane as a packet holds, or equal pieces of one row when a row
    // is longer than a packet), visited in Morton order over their grid of
    // (piece along x, row group along y, plane).
    struct RowTiles {
        RowTiles(const Dims& dims, std::int64_t depth, std::int64_t most_values);
        // The tile at `cell` of the grid: its first value (from the slab's
        // first plane) and how many.
        std::pair<std::int64_t, std::int64_t> tile(const MortonWalk::Cell& cell) const;
        // Packets a step takes when a packet holds `per_packet` values at most.
        std::uint64_t packets(std::int64_t per_packet) const;

        Dims dims;
        std::int64_t depth, piece, pieces, rows, groups;
    };

private:
    std::int64_t first_value() const { return z_begin_ * dims_.plane(); }
    int fill_rows(std::uint8_t* packet, const float* planes);
    // The next packet's values (of `left` from `values`, this packet's first) on their way into L2.
    void prefetch_next(const float* values, std::int64_t left) const;
    // The progressive order's values from position `from` (rank * nx + x), `n` of them, into `out`.
    void gather_rows(const float* planes, std::int64_t from, std::int64_t n, float* out) const;
    // The row (from the first plane walked) that comes `rank`-th: scan order's
    // rows are in place, the progressive order's are not.
    std::int64_t row_at(std::int64_t rank) const { return progressive_ ? progressive_->row_at(rank) : rank; }
    int fill_morton(std::uint8_t* packet, const float* planes);

    Dims dims_;
    std::int64_t z_begin_;
    SendOrder order_;
    WireFormat wire_;
    int most_records_;                        // quad packets: records a packet holds at most
    std::optional<run::RunEncoder> encoder_;  // run packets
    std::uint64_t total_;
    std::int64_t next_linear_ = 0;  // scan and progressive order, or within a tile: next index from the first plane
    std::int64_t tile_left_ = 0;    // run packets in Morton order: values left in the tile
    std::optional<RowTiles> tiles_;  // run packets in Morton order
    MortonWalk morton_;              // Morton order: over voxels (quad packets) or tiles (run packets)
    std::optional<ProgressiveRows> progressive_;  // progressive order
    std::vector<float> gathered_;                 // progressive run packets in a codec: the run's values, row by row
    std::int64_t last_taken_ = 0;  // values the last packet encoded from the planes took
    const std::uint8_t* lost_ = nullptr;  // skip_lost
};

}  // namespace slabcast
