// Rates ("2.81G" = 2.81e9 bit/s of UDP payload) and a pacer that holds a send
// loop to a rate without bursts, in the spirit of Visapult's Rate Control.
#pragma once

#include <cstdint>
#include <string>

namespace slabcast {

// "2.81G", "500M", "10g", "1.5Gbit", "0" (unlimited). Decimal prefixes k/M/G/T.
// Throws std::invalid_argument naming the text.
double parse_rate_bps(const std::string& text);
std::string format_rate(double bits_per_second);  // "2.81 Gbit/s"

std::int64_t monotonic_ns();
std::int64_t realtime_ns();  // CLOCK_REALTIME: for stamps other hosts and processes compare

// Pacer: call wait_to_send(bytes) before each send; it sleeps (and spins for the
// last few microseconds) until those bytes are due. A sender that falls behind
// may catch up by at most `max_burst_ns` worth of data, never more, so a stall
// does not turn into a burst that overruns the receiver.
class Pacer {
public:
    explicit Pacer(double bits_per_second, std::int64_t max_burst_ns = 5'000'000);
    void restart();
    void wait_to_send(std::size_t bytes);
    bool unlimited() const { return ns_per_byte_ <= 0; }

private:
    double ns_per_byte_;
    std::int64_t max_burst_ns_;
    double next_ns_ = 0;
};

}  // namespace slabcast
