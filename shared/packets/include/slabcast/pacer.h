// A pacer that holds a send loop to a rate without bursts, in the spirit of
// Visapult's rate control (Balman et al., 2012, section 4.2): UDP has no
// congestion control, so the sender must not outrun the path or the receiver.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slabcast {

// Call wait_to_send(bytes) before each send; it sleeps (and spins for the
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
