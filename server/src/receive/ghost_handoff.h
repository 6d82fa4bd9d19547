// The top plane of slab k-1, handed to slab k, whose ghost plane it is, when
// k-1 publishes a step: for senders that send owned planes only, slab k's
// published step then still joins slab k-1's without a seam. Every write into
// a slab's buffers stays on that slab's own thread (a published buffer never
// changes): k-1 only fills this staging plane, and k copies what it did not
// receive itself into its buffer before it publishes the same step.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace slabcast {

class GhostHandoff {
public:
    explicit GhostHandoff(std::size_t plane_values) : values_(plane_values), ages_(plane_values) {}

    // Slab k-1's thread: its top plane (values and ages) of `step`, as published.
    void give(std::int64_t step, const float* values, const std::uint8_t* ages);
    // Whether the plane of `step` has been given.
    bool has(std::int64_t step) const { return step_.load(std::memory_order_acquire) == step; }
    // Slab k's thread: for each value of the plane that `missing(i)` says slab k
    // lacks, copies the given value and age. False when `step` was not given.
    template <class Missing>
    bool take(std::int64_t step, float* values, std::uint8_t* ages, Missing missing) const {
        std::lock_guard<std::mutex> lock(mutex_);
        if (step_.load(std::memory_order_relaxed) != step) return false;
        for (std::size_t i = 0; i < values_.size(); ++i)
            if (missing(i)) {
                values[i] = values_[i];
                ages[i] = ages_[i];
            }
        return true;
    }

private:
    mutable std::mutex mutex_;
    std::atomic<std::int64_t> step_{-1};
    std::vector<float> values_;
    std::vector<std::uint8_t> ages_;
};

}  // namespace slabcast
