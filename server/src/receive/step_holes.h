// Which stored values of a slab arrived in the step being written, and, when
// the step is published, its holes filled from the step before with their age
// (docs/shared-memory.md, "Holes and ages"). Arrivals are counted per chunk of
// 4096 values as well as per value, so that publishing costs time in
// proportion to what was lost, not to the slab: a whole step into a buffer
// whose ages are already all 0 copies nothing and touches no age byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slabcast {

class StepHoles {
public:
    static constexpr std::int64_t kChunk = 4096;

    StepHoles(std::size_t values, int buffers);

    // A new step: nothing has arrived.
    void reset();
    // Marks stored values [begin, end) arrived; returns how many already had.
    std::uint64_t mark_range(std::int64_t begin, std::int64_t end);
    // Marks value `at` arrived; true when it already had.
    bool mark(std::int64_t at);
    bool arrived(std::int64_t at) const { return (bits_[static_cast<std::size_t>(at) >> 6] >> (at & 63)) & 1; }
    // Asks for value `at`'s arrival bits ahead of mark_range: rows stored
    // apart (the progressive order) each find theirs out of cache otherwise.
    void prefetch(std::int64_t at) const { __builtin_prefetch(&bits_[static_cast<std::size_t>(at) >> 6], 1); }

    // Buffer `w` about to be published: each value that did not arrive takes
    // the value of `previous_values` (the slab's previous publication; null
    // when there is none) and that publication's age + 1 (255, never arrived,
    // stays 255; without a previous publication it is 0, age 255); arrived values get
    // age 0. Returns the holes at offsets >= `owned_begin` (the owned planes).
    std::uint64_t fill(int w, float* values, std::uint8_t* ages, const float* previous_values,
                       const std::uint8_t* previous_ages, std::int64_t owned_begin);
    // What buffer `w`'s ages hold is unknown (a slab re-attached after a restart).
    void forget_ages(int w);

    // Age bytes written by fill() so far (tests: a whole step after whole steps writes none).
    std::uint64_t age_bytes_written() const { return age_bytes_written_; }

private:
    std::int64_t chunk_length(std::size_t c) const;

    std::int64_t values_;
    std::vector<std::uint64_t> bits_;                // one per stored value
    std::vector<std::uint32_t> fresh_;               // arrivals per chunk
    std::vector<std::vector<std::uint8_t>> aged_;    // per buffer and chunk: 1 when an age there may be nonzero
    std::uint64_t age_bytes_written_ = 0;
};

}  // namespace slabcast
