#include "slabcast/rate.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace slabcast {

double parse_rate_bps(const std::string& text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        throw std::invalid_argument("rate '" + text + "': expected a number such as 2.81G");
    }
    std::string unit = text.substr(used);
    for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double scale = 1;
    if (!unit.empty()) {
        switch (unit[0]) {
        case 'k': scale = 1e3; break;
        case 'm': scale = 1e6; break;
        case 'g': scale = 1e9; break;
        case 't': scale = 1e12; break;
        default: break;
        }
        std::string rest = scale == 1 ? unit : unit.substr(1);
        if (!(rest.empty() || rest == "b" || rest == "bps" || rest == "bit" || rest == "bit/s"))
            throw std::invalid_argument("rate '" + text + "': unknown unit '" + unit + "'");
    }
    // 1e15 bit/s (1000T) is far beyond any link; "1e300T" would be infinity.
    const double bps = value * scale;
    if (!std::isfinite(bps) || bps < 0 || bps > 1e15)
        throw std::invalid_argument("rate '" + text + "' must be 0 to 1000T bit/s (0 = unlimited)");
    return bps;
}

std::string format_rate(double bps) {
    char buf[64];
    if (bps >= 1e9) std::snprintf(buf, sizeof buf, "%.2f Gbit/s", bps / 1e9);
    else std::snprintf(buf, sizeof buf, "%.1f Mbit/s", bps / 1e6);
    return buf;
}

std::int64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

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
