// The two clocks every role stamps with: monotonic for intervals on one host,
// realtime for stamps that other hosts and processes compare.
#pragma once

#include <cstdint>

namespace slabcast {

std::int64_t monotonic_ns();
std::int64_t realtime_ns();  // CLOCK_REALTIME

}  // namespace slabcast
