#include "slabcast/pacer.h"

#include "slabcast/clock.h"

#include <ctime>

namespace slabcast {

Pacer::Pacer(double bits_per_second, std::int64_t max_burst_ns)
    : ns_per_byte_(bits_per_second > 0 ? 8e9 / bits_per_second : 0), max_burst_ns_(max_burst_ns) {
    restart();
}

void Pacer::restart() { next_ns_ = static_cast<double>(monotonic_ns()); }

void Pacer::wait_to_send(std::size_t bytes) {
    if (unlimited()) return;
    std::int64_t now = monotonic_ns();
    // Fallen behind (descheduled, slow syscall): forgive all but max_burst_ns.
    if (next_ns_ < static_cast<double>(now - max_burst_ns_)) next_ns_ = static_cast<double>(now - max_burst_ns_);
    const auto due = static_cast<std::int64_t>(next_ns_);
    // Sleep for the bulk of the wait; spin the last 50 us, which a sleep overshoots.
    if (due - now > 60'000) {
        std::int64_t wake = due - 50'000;
        timespec ts{static_cast<time_t>(wake / 1'000'000'000), static_cast<long>(wake % 1'000'000'000)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    }
    while (monotonic_ns() < due) {
    }
    next_ns_ += ns_per_byte_ * static_cast<double>(bytes);
}

}  // namespace slabcast
