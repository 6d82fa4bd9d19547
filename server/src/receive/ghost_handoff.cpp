#include "receive/ghost_handoff.h"

#include <algorithm>

namespace slabcast {

void GhostHandoff::give(std::int64_t step, const float* values, const std::uint8_t* ages) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::copy(values, values + values_.size(), values_.begin());
    std::copy(ages, ages + ages_.size(), ages_.begin());
    step_.store(step, std::memory_order_release);
}

}  // namespace slabcast
