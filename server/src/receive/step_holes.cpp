#include "receive/step_holes.h"

#include "slabcast/slab_file.h"

#include <algorithm>
#include <cstring>

namespace slabcast {

StepHoles::StepHoles(std::size_t values, int buffers)
    : values_(static_cast<std::int64_t>(values)),
      bits_((values + 63) / 64, 0),
      fresh_((values + kChunk - 1) / kChunk, 0),
      aged_(static_cast<std::size_t>(buffers), std::vector<std::uint8_t>(fresh_.size(), 1)) {}

void StepHoles::reset() {
    std::fill(bits_.begin(), bits_.end(), 0);
    std::fill(fresh_.begin(), fresh_.end(), 0);
}

void StepHoles::forget_ages(int w) { std::fill(aged_[w].begin(), aged_[w].end(), 1); }

std::int64_t StepHoles::chunk_length(std::size_t c) const {
    return std::min<std::int64_t>(kChunk, values_ - static_cast<std::int64_t>(c) * kChunk);
}

bool StepHoles::mark(std::int64_t at) {
    std::uint64_t& word = bits_[static_cast<std::size_t>(at) >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (at & 63);
    if (word & bit) return true;
    word |= bit;
    ++fresh_[static_cast<std::size_t>(at / kChunk)];
    return false;
}

std::uint64_t StepHoles::mark_range(std::int64_t begin, std::int64_t end) {
    std::uint64_t already = 0;
    while (begin < end) {
        const std::int64_t word_end = std::min(end, (begin | 63) + 1);  // words never straddle a chunk
        const int width = static_cast<int>(word_end - begin);
        const std::uint64_t mask = (width == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << width) - 1)) << (begin & 63);
        std::uint64_t& word = bits_[static_cast<std::size_t>(begin) >> 6];
        // Counting bits only where some were set already: a fresh run, the
        // common case, costs no popcount (a libgcc call on baseline x86-64).
        const std::uint64_t overlap = word & mask;
        const auto had = overlap ? static_cast<std::uint32_t>(__builtin_popcountll(overlap)) : 0u;
        already += had;
        fresh_[static_cast<std::size_t>(begin / kChunk)] += static_cast<std::uint32_t>(width) - had;
        word |= mask;
        begin = word_end;
    }
    return already;
}

std::uint64_t StepHoles::fill(int w, float* values, std::uint8_t* ages, const float* previous_values,
                              const std::uint8_t* previous_ages, std::int64_t owned_begin) {
    std::uint64_t owned_holes = 0;
    std::vector<std::uint8_t>& aged = aged_[static_cast<std::size_t>(w)];
    for (std::size_t c = 0; c < fresh_.size(); ++c) {
        const std::int64_t first = static_cast<std::int64_t>(c) * kChunk, length = chunk_length(c);
        if (static_cast<std::int64_t>(fresh_[c]) == length) {  // whole: ages all 0
            if (aged[c]) {
                std::memset(ages + first, 0, static_cast<std::size_t>(length));
                age_bytes_written_ += static_cast<std::uint64_t>(length);
                aged[c] = 0;
            }
            continue;
        }
        for (std::int64_t i = first; i < first + length; ++i) {
            if (arrived(i)) {
                ages[i] = 0;
                continue;
            }
            if (previous_values) {
                values[i] = previous_values[i];
                // A value the previous step filled from its own coarser
                // sample is of that step: one step old now.
                const std::uint8_t a = previous_ages[i] == kAgeCoarse ? 0 : previous_ages[i];
                ages[i] = a == kAgeNeverArrived ? kAgeNeverArrived : static_cast<std::uint8_t>(std::min<int>(a + 1, kAgeOldest));
            } else {  // nothing to fall back on: 0, whatever the buffer held (docs/shared-memory.md)
                values[i] = 0.0f;
                ages[i] = kAgeNeverArrived;
            }
            owned_holes += i >= owned_begin ? 1 : 0;
        }
        age_bytes_written_ += static_cast<std::uint64_t>(length);
        aged[c] = 1;
    }
    return owned_holes;
}

}  // namespace slabcast
