#include "slabcast/progressive_rows.h"

#include "slabcast/slab_file.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace slabcast {
namespace {

int bits_for(std::int64_t n) {  // bits to number 0..n-1
    int b = 0;
    while ((std::int64_t{1} << b) < n) ++b;
    return b;
}

std::uint64_t reverse_bits(std::uint64_t v, int bits) {
    std::uint64_t r = 0;
    for (int i = 0; i < bits; ++i, v >>= 1) r = r << 1 | (v & 1);
    return r;
}

// y's bit i, then p's bit i, from bit 0 up; the longer axis's last bits alone.
std::uint64_t interleave(std::uint64_t y, std::uint64_t p, int y_bits, int p_bits) {
    std::uint64_t m = 0;
    int out = 0;
    for (int i = 0; i < std::max(y_bits, p_bits); ++i) {
        if (i < y_bits) m |= ((y >> i) & 1) << out++;
        if (i < p_bits) m |= ((p >> i) & 1) << out++;
    }
    return m;
}

std::int64_t lowest_bit(std::int64_t v) { return v & -v; }

}  // namespace

ProgressiveRows::ProgressiveRows(std::int64_t ny, std::int64_t owned_planes, std::int64_t ghost_planes)
    : ny_(ny), ghost_rows_(0), owned_rows_(0) {
    if (ny < 1 || owned_planes < 1 || ghost_planes < 0)
        throw std::invalid_argument("progressive order: a slab needs ny >= 1, an owned plane, and no negative ghost planes");
    if (!fits(ny, owned_planes, ghost_planes))
        throw std::invalid_argument("progressive order: the slab has more than 2^32 rows");
    ghost_rows_ = ny * ghost_planes;
    owned_rows_ = ny * owned_planes;
    const int y_bits = bits_for(ny), p_bits = bits_for(owned_planes);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed;
    keyed.reserve(static_cast<std::size_t>(owned_rows_ + ghost_rows_));
    // The ghost plane's rows first, as stored (docs/shared-memory.md): a step
    // whose owned planes are whole then has its ghost plane too, as in scan
    // order, so the receiver may publish it as soon as they are.
    for (std::int64_t row = 0; row < ghost_rows_; ++row) keyed.emplace_back(0, static_cast<std::uint32_t>(row));
    // A row's level: the bit length of its bit-reversed Morton code. Within a
    // level, rows go in the order the slab stores them, so the receiver's
    // stores sweep memory at a fixed stride rather than jump about (measured:
    // rows in bit-reversed order stored at 0.35x scan order's rate).
    for (std::int64_t p = 0; p < owned_planes; ++p)
        for (std::int64_t y = 0; y < ny; ++y) {
            const std::uint64_t key = reverse_bits(interleave(y, p, y_bits, p_bits), y_bits + p_bits);
            const auto level = static_cast<std::uint64_t>(key == 0 ? 0 : 64 - __builtin_clzll(key));
            const std::int64_t row = ghost_rows_ + p * ny + y;
            keyed.emplace_back(level << 32 | static_cast<std::uint64_t>(row), static_cast<std::uint32_t>(row));
        }
    std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(ghost_rows_), keyed.end());
    order_.resize(keyed.size());
    rank_.resize(keyed.size());
    for (std::size_t r = 0; r < keyed.size(); ++r) {
        order_[r] = keyed[r].second;
        rank_[keyed[r].second] = static_cast<std::uint32_t>(r);
    }
}

bool ProgressiveRows::fits(std::int64_t ny, std::int64_t owned_planes, std::int64_t ghost_planes) {
    // Compared by division: no product of hostile sizes can wrap.
    return ny >= 1 && owned_planes >= 1 && ghost_planes >= 0 && owned_planes <= kMostRows &&
           ghost_planes <= kMostRows && owned_planes + ghost_planes <= kMostRows / ny;
}

std::int64_t ProgressiveRows::parent(std::int64_t row) const {
    if (row < ghost_rows_) return ghost_rows_ + row % ny_;  // the same y, first owned plane
    const std::int64_t owned = row - ghost_rows_;
    const std::int64_t y = owned % ny_, p = owned / ny_;
    if (y == 0 && p == 0) return -1;
    // The Morton code's lowest set bit: y's bit i comes before p's bit i.
    const bool y_first = y != 0 && (p == 0 || lowest_bit(y) <= lowest_bit(p));
    return y_first ? row - lowest_bit(y) : row - lowest_bit(p) * ny_;
}

std::uint64_t fill_from_coarser(const ProgressiveRows& rows, std::int64_t nx, float* values, std::uint8_t* ages) {
    std::uint64_t filled = 0;
    const auto width = static_cast<std::size_t>(nx);
    // Coarse to fine: the owned rows after the first, then the ghost rows,
    // whose parents are owned rows; each row's parent is final before it.
    const std::int64_t ghost = rows.rows() - rows.owned_rows();
    for (std::int64_t k = 1; k < rows.rows(); ++k) {
        const std::int64_t rank = k < rows.owned_rows() ? ghost + k : k - rows.owned_rows();
        const std::int64_t row = rows.row_at(rank);
        std::uint8_t* age = ages + row * nx;
        // Rows that arrived whole are the common case: one pass finds them.
        if (std::all_of(age, age + width, [](std::uint8_t a) { return a == 0; })) continue;
        const std::int64_t parent = rows.parent(row);
        float* value = values + row * nx;
        const float* parent_value = values + parent * nx;
        const std::uint8_t* parent_age = ages + parent * nx;
        for (std::size_t x = 0; x < width; ++x) {
            if (age[x] == 0 || (parent_age[x] != 0 && parent_age[x] != kAgeCoarse)) continue;
            value[x] = parent_value[x];
            age[x] = kAgeCoarse;
            ++filled;
        }
    }
    return filled;
}

}  // namespace slabcast
