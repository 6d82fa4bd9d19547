#include "shuffle/slab_walker.h"

#include "shuffle/datagram_batch.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_packet.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <tuple>

namespace slabcast {

WireFormat parse_wire_format(const std::string& text) {
    if (text == "quad") return WireFormat::Quad;
    if (text == "run") return WireFormat::Run;
    throw std::invalid_argument("wire '" + text + "': expected quad or run");
}

SlabWalker::RowTiles::RowTiles(const Dims& d, std::int64_t depth_, std::int64_t most_values)
    : dims(d), depth(depth_) {
    if (dims.nx <= most_values) {
        piece = dims.nx;
        pieces = 1;
        rows = std::min(dims.ny, most_values / dims.nx);
    } else {
        pieces = (dims.nx + most_values - 1) / most_values;
        piece = (dims.nx + pieces - 1) / pieces;
        rows = 1;
    }
    groups = (dims.ny + rows - 1) / rows;
}

std::pair<std::int64_t, std::int64_t> SlabWalker::RowTiles::tile(const MortonWalk::Cell& cell) const {
    const std::int64_t x = cell[0] * piece, y = cell[1] * rows;
    const std::int64_t width = std::min(piece, dims.nx - x), height = std::min(rows, dims.ny - y);
    // Whole rows (one piece) or one piece of one row: either way a range.
    return {cell[2] * dims.plane() + y * dims.nx + x, width * height};
}

std::uint64_t SlabWalker::RowTiles::packets(std::int64_t per_packet) const {
    // A tile is a full or the last piece along x, times a full or the last row group.
    const std::int64_t last_piece = dims.nx - (pieces - 1) * piece, last_rows = dims.ny - (groups - 1) * rows;
    const auto of = [&](std::int64_t values) { return (values + per_packet - 1) / per_packet; };
    const std::int64_t plane = (pieces - 1) * (groups - 1) * of(piece * rows) + (pieces - 1) * of(piece * last_rows) +
                               (groups - 1) * of(last_piece * rows) + of(last_piece * last_rows);
    return static_cast<std::uint64_t>(plane * depth);
}

SlabWalker::SlabWalker(const Dims& dims, std::int64_t z_begin, std::int64_t z_end, SendOrder order, WireFormat wire,
                       run::CodecChoice codec, std::int64_t ghost_planes, std::size_t most_packet_bytes)
    : dims_(dims), z_begin_(z_begin), order_(order), wire_(wire),
      most_records_(quad::records_within(most_packet_bytes)),
      total_(static_cast<std::uint64_t>(dims.plane() * (z_end - z_begin))) {
    if (wire == WireFormat::Quad && codec.codec != run::Codec::None)
        throw std::invalid_argument("codec " + run::to_string(codec) + " needs run packets (--wire run)");
    if (wire == WireFormat::Run) encoder_.emplace(codec, most_packet_bytes);
    else if (most_records_ < 1) throw std::invalid_argument("quad packets of " + std::to_string(most_packet_bytes) + " bytes hold no record");
    if (order == SendOrder::Progressive) {
        progressive_.emplace(dims.ny, z_end - z_begin - ghost_planes, ghost_planes);
        if (wire == WireFormat::Run && codec.codec != run::Codec::None)
            gathered_.resize(static_cast<std::size_t>(encoder_->max_values()));
    }
    if (order == SendOrder::Morton) {
        const auto cells = [](std::int64_t n) { return static_cast<std::int32_t>(n); };
        if (wire == WireFormat::Run) {
            tiles_.emplace(dims, z_end - z_begin, encoder_->max_values());
            morton_ = MortonWalk({cells(tiles_->pieces), cells(tiles_->groups), cells(tiles_->depth)});
        } else {
            morton_ = MortonWalk({cells(dims.nx), cells(dims.ny), cells(z_end - z_begin)});
        }
    }
    reset();
}

run::RunEncoder::Packet SlabWalker::fill_run_planes(std::uint8_t* packet, const float* planes, std::int32_t step,
                                                    std::int32_t slab) {
    std::int64_t left = static_cast<std::int64_t>(total_) - next_linear_;
    if (tiles_) {
        // Morton order: the rest of the tile, or the next tile. A tile fits
        // a packet unless lz4 cannot compress it; then it takes several.
        MortonWalk::Cell cell;
        if (tile_left_ == 0 && morton_.next(cell)) std::tie(next_linear_, tile_left_) = tiles_->tile(cell);
        left = tile_left_;
    }
    if (lost_) {
        // A run starts at the next value that arrived and ends before the
        // next that did not (looked for no further than a packet holds).
        const auto total = static_cast<std::int64_t>(total_);
        while (next_linear_ < total && lost_[next_linear_] != 0) ++next_linear_;
        const std::uint8_t* from = lost_ + next_linear_;
        const std::uint8_t* until = lost_ + std::min<std::int64_t>(total, next_linear_ + encoder_->max_raw_values() * 8);
        left = std::find_if(from, until, [](std::uint8_t age) { return age != 0; }) - from;
    }
    if (left <= 0) return {};
    const std::int64_t i = next_linear_;
    const std::int64_t first_row = row_at(i / dims_.nx);
    run::Header h;
    h.step = step;
    h.slab = slab;
    h.x = static_cast<std::int32_t>(i % dims_.nx);
    h.y = static_cast<std::int32_t>(first_row % dims_.ny);
    h.z = static_cast<std::int32_t>(z_begin_ + first_row / dims_.ny);
    h.progressive = progressive_.has_value();
    // The values as the staged step holds them, encoded straight into the
    // packet; in progressive order gathered a row's piece at a time, raw ones
    // straight into the packet (a copy fewer), others for the encoder.
    const float* values = planes + i;
    run::RunEncoder::Packet p;
    if (progressive_ && encoder_->choice().codec == run::Codec::None) {
        h.count = static_cast<std::int32_t>(std::min<std::int64_t>(left, encoder_->max_values()));
        gather_rows(planes, i, h.count, reinterpret_cast<float*>(run::write_header(packet, h)));
        p = {h.count, run::packet_bytes(h.count)};
    } else {
        if (progressive_) {
            left = std::min<std::int64_t>(left, static_cast<std::int64_t>(gathered_.size()));
            gather_rows(planes, i, left, gathered_.data());
            values = gathered_.data();
        }
        if (!progressive_) prefetch_next(values, left);
        p = encoder_->encode(values, left, h, packet);
        last_taken_ = p.count;
    }
    next_linear_ += p.count;
    if (tiles_) tile_left_ -= p.count;
    return p;
}

run::RunEncoder::Packet SlabWalker::pack(std::uint8_t* packet, const float* planes, std::int32_t step,
                                         std::int32_t slab) {
    if (wire_ == WireFormat::Run) return fill_run_planes(packet, planes, step, slab);
    const int n = fill_planes(packet, planes);
    if (n == 0) return {};
    quad::write_header(packet, step, n);
    return {n, quad::packet_bytes(n)};
}

SlabWalker::Filled SlabWalker::fill_batch(DatagramBatch& batch, const float* planes, std::int32_t step,
                                           std::int32_t slab) {
    Filled filled;
    batch.clear();
    while (!batch.full()) {
        const run::RunEncoder::Packet p = pack(batch.next(), planes, step, slab);
        if (p.count == 0) {
            filled.last = true;
            break;
        }
        batch.add(p.bytes);
        filled.values += static_cast<std::uint64_t>(p.count);
    }
    return filled;
}

void SlabWalker::prefetch_next(const float* values, std::int64_t left) const {
    // An encoder reads a packet's values once, from a staged step far from
    // any cache, and hardware prefetchers stop at each 4 KiB page's end: ask
    // for the next packet's values (as many as the last took) into L2 while
    // this one is encoded, a line at a time.
    const std::int64_t from = last_taken_, to = std::min(left, 2 * last_taken_);
    const char* first = reinterpret_cast<const char*>(values + from);
    for (std::int64_t line = 0; line < (to - from) * 4; line += 64) __builtin_prefetch(first + line, 0, 2);
}

void SlabWalker::gather_rows(const float* planes, std::int64_t from, std::int64_t n, float* out) const {
    const std::int64_t rows = static_cast<std::int64_t>(total_) / dims_.nx;
    for (std::int64_t k = 0, at = from; k < n;) {
        const std::int64_t x = at % dims_.nx, piece = std::min(n - k, dims_.nx - x);
        // The rows of a level lie a stride apart, past where hardware
        // prefetchers follow: ask for the one kAhead rows on, a line at a
        // time, as much of it as a packet holds at most.
        constexpr std::int64_t kAhead = 4, kMostBytes = run::kMaxPayloadBytes;
        if (const std::int64_t ahead = at / dims_.nx + kAhead; ahead < rows) {
            const char* row = reinterpret_cast<const char*>(planes + row_at(ahead) * dims_.nx);
            const std::int64_t bytes = std::min<std::int64_t>(dims_.nx * 4, kMostBytes);
            for (std::int64_t line = 0; line < bytes; line += 64) __builtin_prefetch(row + line);
        }
        std::memcpy(out + k, planes + row_at(at / dims_.nx) * dims_.nx + x, sizeof(float) * static_cast<std::size_t>(piece));
        k += piece;
        at += piece;
    }
}

std::uint64_t SlabWalker::total_packets() const {
    // lz4 packets carry at least as many values as raw ones (or are raw).
    const std::uint64_t per = wire_ == WireFormat::Quad ? static_cast<std::uint64_t>(most_records_)
                              : encoder_->fixed_packet_bytes() ? static_cast<std::uint64_t>(encoder_->max_values())
                                                               : static_cast<std::uint64_t>(encoder_->max_raw_values());
    if (tiles_) return tiles_->packets(static_cast<std::int64_t>(per));
    return (total_ + per - 1) / per;
}

std::size_t SlabWalker::fixed_packet_bytes() const {
    return wire_ == WireFormat::Quad ? quad::packet_bytes(most_records_) : encoder_->fixed_packet_bytes();
}

void SlabWalker::reset() {
    next_linear_ = 0;
    tile_left_ = 0;
    morton_.reset();
    lost_ = nullptr;
}

void SlabWalker::skip_lost(const std::uint8_t* ages) {
    if (ages && (wire_ != WireFormat::Run || order_ != SendOrder::Scan))
        throw std::logic_error("values lost in a recording are left out of run packets in scan order only");
    lost_ = ages;
}

int SlabWalker::fill_planes(std::uint8_t* packet, const float* planes) {
    return order_ == SendOrder::Morton ? fill_morton(packet, planes) : fill_rows(packet, planes);
}

int SlabWalker::fill_rows(std::uint8_t* packet, const float* planes) {
    const int n = static_cast<int>(std::min<std::int64_t>(most_records_, total_ - next_linear_));
    if (n <= 0) return 0;
    std::int64_t rank = next_linear_ / dims_.nx;
    auto x = static_cast<std::int32_t>(next_linear_ % dims_.nx);
    // Row by row: within a row only x changes, a loop the compiler keeps tight.
    for (int k = 0; k < n; ++rank, x = 0) {
        const std::int64_t row = row_at(rank);
        const auto y = static_cast<std::int32_t>(row % dims_.ny);
        const auto z = static_cast<std::int32_t>(z_begin_ + row / dims_.ny);
        const float* v = planes + row * dims_.nx + x;  // v[j]: the row's value at x + j
        const int run = static_cast<int>(std::min<std::int64_t>(n - k, dims_.nx - x));
        // Each record as two little-endian 64-bit words, (x, y) and (z, v):
        // x counts up within the row, so the first word is a plain increment.
        std::uint8_t* out = packet + quad::kHeaderBytes + quad::kRecordBytes * static_cast<std::size_t>(k);
        const std::uint64_t xy = static_cast<std::uint32_t>(x) | std::uint64_t{static_cast<std::uint32_t>(y)} << 32;
        const std::uint64_t z_low = static_cast<std::uint32_t>(z);
        for (int j = 0; j < run; ++j, out += quad::kRecordBytes) {
            // The staged step is in 4 KiB pages, and hardware prefetchers stop
            // at a page's end: ask for the values a page ahead, a line at a time.
            if ((j & 15) == 0) __builtin_prefetch(v + j + 1024);
            std::uint32_t bits;
            std::memcpy(&bits, v + j, sizeof bits);
            const std::uint64_t words[2] = {xy + static_cast<std::uint64_t>(j), z_low | std::uint64_t{bits} << 32};
            std::memcpy(out, words, sizeof words);
        }
        k += run;
    }
    next_linear_ += n;
    return n;
}

int SlabWalker::fill_morton(std::uint8_t* packet, const float* planes) {
    int n = 0;
    MortonWalk::Cell c;
    while (n < most_records_ && morton_.next(c)) {
        const std::int64_t z = z_begin_ + c[2];
        quad::write_record(packet, n++,
                           quad::Record{c[0], c[1], static_cast<std::int32_t>(z), planes[volume_offset(dims_, c[0], c[1], c[2])]});
    }
    return n;
}

}  // namespace slabcast
