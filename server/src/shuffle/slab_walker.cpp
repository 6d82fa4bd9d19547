#include "shuffle/slab_walker.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_packet.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace slabcast {

SendOrder parse_send_order(const std::string& text) {
    if (text == "scan") return SendOrder::Scan;
    if (text == "morton" || text == "zorder") return SendOrder::Morton;
    throw std::invalid_argument("order '" + text + "': expected scan or morton");
}

WireFormat parse_wire_format(const std::string& text) {
    if (text == "quad") return WireFormat::Quad;
    if (text == "run") return WireFormat::Run;
    throw std::invalid_argument("wire '" + text + "': expected quad or run");
}

SlabWalker::SlabWalker(const Dims& dims, std::int64_t z_begin, std::int64_t z_end, SendOrder order, WireFormat wire,
                       run::CodecChoice codec)
    : dims_(dims), z_begin_(z_begin), z_end_(z_end), order_(order), wire_(wire),
      total_(static_cast<std::uint64_t>(dims.plane() * (z_end - z_begin))) {
    if (wire == WireFormat::Run && order != SendOrder::Scan)
        throw std::invalid_argument("run packets are sent in scan order only (--order scan); "
                                    "Morton order needs quad packets (--wire quad)");
    if (wire == WireFormat::Quad && codec.codec != run::Codec::None)
        throw std::invalid_argument("codec " + run::to_string(codec) + " needs run packets (--wire run)");
    if (wire == WireFormat::Run) encoder_.emplace(codec);
    reset();
}

run::RunEncoder::Packet SlabWalker::fill_run(std::uint8_t* packet, const float* volume, std::int32_t step,
                                             std::int32_t slab) {
    const std::int64_t i = next_linear_;
    const std::int64_t left = static_cast<std::int64_t>(total_) - i;
    if (left <= 0) return {};
    run::Header h;
    h.step = step;
    h.slab = slab;
    h.x = static_cast<std::int32_t>(i % dims_.nx);
    h.y = static_cast<std::int32_t>((i / dims_.nx) % dims_.ny);
    h.z = static_cast<std::int32_t>(z_begin_ + i / dims_.plane());
    // The values as the staged step holds them, encoded straight into the packet.
    const run::RunEncoder::Packet p = encoder_->encode(volume + z_begin_ * dims_.plane() + i, left, h, packet);
    next_linear_ += p.count;
    return p;
}

std::uint64_t SlabWalker::total_packets() const {
    // lz4 packets carry at least as many values as raw ones (or are raw).
    const std::uint64_t per = wire_ == WireFormat::Quad ? quad::kMaxRecords
                              : encoder_->fixed_packet_bytes() ? static_cast<std::uint64_t>(encoder_->most_values())
                                                               : run::kMaxValues;
    return (total_ + per - 1) / per;
}

std::size_t SlabWalker::fixed_packet_bytes() const {
    return wire_ == WireFormat::Quad ? quad::kMaxPacketBytes : encoder_->fixed_packet_bytes();
}

void SlabWalker::reset() {
    next_linear_ = 0;
    stack_.clear();
    if (order_ == SendOrder::Morton && total_ > 0) {
        const std::int64_t extent = std::max({dims_.nx, dims_.ny, z_end_ - z_begin_});
        std::int32_t size = 1;
        while (size < extent) size *= 2;
        stack_.push_back(Node{0, 0, 0, size});
    }
}

int SlabWalker::fill(std::uint8_t* packet, const float* volume) {
    return order_ == SendOrder::Scan ? fill_scan(packet, volume) : fill_morton(packet, volume);
}

int SlabWalker::fill_scan(std::uint8_t* packet, const float* volume) {
    const std::int64_t first = z_begin_ * dims_.plane();
    const int n = static_cast<int>(std::min<std::int64_t>(quad::kMaxRecords, total_ - next_linear_));
    if (n <= 0) return 0;
    std::int64_t i = next_linear_;
    auto x = static_cast<std::int32_t>(i % dims_.nx);
    auto y = static_cast<std::int32_t>((i / dims_.nx) % dims_.ny);
    auto z = static_cast<std::int32_t>(z_begin_ + i / dims_.plane());
    const float* v = volume + first + i;
    // Row by row: within a row only x changes, a loop the compiler keeps tight.
    for (int k = 0; k < n;) {
        const int run = static_cast<int>(std::min<std::int64_t>(n - k, dims_.nx - x));
        // Each record as two little-endian 64-bit words, (x, y) and (z, v):
        // x counts up within the row, so the first word is a plain increment.
        std::uint8_t* out = packet + quad::kHeaderBytes + quad::kRecordBytes * static_cast<std::size_t>(k);
        const std::uint64_t xy = static_cast<std::uint32_t>(x) | std::uint64_t{static_cast<std::uint32_t>(y)} << 32;
        const std::uint64_t z_low = static_cast<std::uint32_t>(z);
        for (int j = 0; j < run; ++j, out += quad::kRecordBytes) {
            // The staged step is in 4 KiB pages, and hardware prefetchers stop
            // at a page's end: ask for the values a page ahead, a line at a time.
            if ((j & 15) == 0) __builtin_prefetch(v + k + j + 1024);
            std::uint32_t bits;
            std::memcpy(&bits, v + k + j, sizeof bits);
            const std::uint64_t words[2] = {xy + static_cast<std::uint64_t>(j), z_low | std::uint64_t{bits} << 32};
            std::memcpy(out, words, sizeof words);
        }
        k += run;
        x += run;
        if (x == dims_.nx) {
            x = 0;
            if (++y == dims_.ny) {
                y = 0;
                ++z;
            }
        }
    }
    next_linear_ += n;
    return n;
}

int SlabWalker::fill_morton(std::uint8_t* packet, const float* volume) {
    const std::int64_t depth = z_end_ - z_begin_;
    int n = 0;
    while (n < quad::kMaxRecords && !stack_.empty()) {
        const Node node = stack_.back();
        stack_.pop_back();
        // Prune octants that lie wholly outside the slab.
        if (node.x >= dims_.nx || node.y >= dims_.ny || node.z >= depth) continue;
        if (node.size == 1) {
            const std::int64_t z = z_begin_ + node.z;
            quad::write_record(packet, n++,
                               quad::Record{node.x, node.y, static_cast<std::int32_t>(z),
                                            volume[volume_offset(dims_, node.x, node.y, z)]});
            continue;
        }
        const std::int32_t h = node.size / 2;
        // Children in reverse Morton order (x is the lowest bit) so child 0 pops first.
        for (int c = 7; c >= 0; --c)
            stack_.push_back(Node{node.x + (c & 1 ? h : 0), node.y + (c & 2 ? h : 0), node.z + (c & 4 ? h : 0), h});
    }
    return n;
}

}  // namespace slabcast
