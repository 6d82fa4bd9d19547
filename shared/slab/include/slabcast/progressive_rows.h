// The progressive order of a slab's rows (docs/wire-format.md, "Send order"):
// coarse first, so that any prefix of a step past its ghost plane covers the
// whole slab at a coarser resolution and the picture refines as more arrives. The SC11 stream
// sent each slab in scan order (Balman et al., 2012, section 4.2), so a step
// cut short showed its first planes new and the rest old; hierarchical orders
// exist in storage formats (ViSUS's HZ order), here on a live stream.
//
// A row is the nx values of one (y, plane) of the slab's stored planes,
// numbered as the slab stores them: row = (z - stored_z_begin) * ny + y. Each
// packet still carries whole pieces of rows, so stores stay sequential.
//
// The ghost plane's rows (docs/shared-memory.md) come first, as stored, as
// in scan order: a step whose owned planes are whole has its ghost plane too,
// and a sender that sends no ghost plane walks the same order from its first
// owned row. Then the owned rows, level by level: a row's level is the bit length
// of the bit-reversed Morton code of (y, p), p = z - z_begin, y's bit i before
// p's bit i. Levels 0..k hold the rows whose y and p are multiples of the
// coarse strides, the strides halving alternately along y and p (equal
// spacing in y and z) from one level to the next; within a level, rows go in
// the order the slab stores them, so stores sweep memory at a fixed stride. A
// cut within a level leaves the slab at that level's resolution in its first
// part and the level before's in the rest: coarser, never missing.
//
// Each owned row but the first has a parent earlier in the order: the row
// whose Morton code is the row's with its lowest set bit cleared (a coarser
// sample, 2^i rows or planes below it); a ghost row's parent is the same y in
// the first owned plane, the plane next to it. `--fill nearest` takes a missing value
// from the parent's (docs/shared-memory.md, "Holes and ages").
#pragma once

#include <cstdint>
#include <vector>

namespace slabcast {

class ProgressiveRows {
public:
    // The most rows a slab may have for this order (ranks are 32-bit).
    static constexpr std::int64_t kMostRows = std::int64_t{1} << 32;

    // Rows of a slab of `ny` rows a plane, `owned_planes` owned planes and
    // `ghost_planes` stored below them. Throws std::invalid_argument when a
    // size is below its least (ny, owned_planes 1, ghost_planes 0) or the
    // rows number more than kMostRows.
    ProgressiveRows(std::int64_t ny, std::int64_t owned_planes, std::int64_t ghost_planes);
    // Whether a slab of these sizes has an order (the constructor's test).
    static bool fits(std::int64_t ny, std::int64_t owned_planes, std::int64_t ghost_planes);

    std::int64_t rows() const { return static_cast<std::int64_t>(order_.size()); }
    std::int64_t owned_rows() const { return owned_rows_; }
    // The row sent `rank`-th, 0 <= rank < rows(); the first owned row is rank rows() - owned_rows().
    std::int64_t row_at(std::int64_t rank) const { return order_[static_cast<std::size_t>(rank)]; }
    // Where `row` comes in the order, 0 <= row < rows().
    std::int64_t rank_of(std::int64_t row) const { return rank_[static_cast<std::size_t>(row)]; }
    // The coarser row `row` refines; -1 for the first owned row, the root.
    std::int64_t parent(std::int64_t row) const;

private:
    std::int64_t ny_, ghost_rows_, owned_rows_;
    std::vector<std::uint32_t> order_;  // rank -> row
    std::vector<std::uint32_t> rank_;   // row -> rank
};

// Fills a published step's holes from coarser samples of the same step, the
// `nearest` fill rule: in order, each value whose age is not 0 (it did not
// arrive) takes its parent row's value at the same x when that one arrived or
// was itself filled so (age 0 or kAgeCoarse), and then has age kAgeCoarse.
// Any other value keeps what it has (the previous step's, with its age, or
// never arrived). `values` and `ages` are one buffer's stored values, rows of
// `nx`. Returns how many values were filled.
std::uint64_t fill_from_coarser(const ProgressiveRows& rows, std::int64_t nx, float* values, std::uint8_t* ages);

}  // namespace slabcast
