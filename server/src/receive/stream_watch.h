// Which of a receiver's streams went quiet while the others moved on to a new
// step: its shuffler is down, or its path is cut. Fed the streams' counters
// once a second by the status thread; pure logic, no clocks of its own.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace slabcast {

class StreamWatch {
public:
    // A stream is missing once another stream began a new step while it had
    // no packets, and it has had none for `quiet_ns` since.
    explicit StreamWatch(std::int64_t quiet_ns) : quiet_ns_(quiet_ns) {}

    struct Sample {
        int stream = 0;
        std::uint64_t packets = 0;     // grows with every packet stored
        std::uint64_t steps_begun = 0;  // grows with every step begun (steps_begun() of the slab's generation)
    };
    struct Changes {
        std::vector<int> missing;  // streams that went missing at this call
        std::vector<int> back;     // streams that were missing and have packets again
    };

    Changes update(const std::vector<Sample>& samples, std::int64_t now_ns);
    const std::set<int>& missing() const { return missing_; }

private:
    struct Seen {
        std::uint64_t packets = 0, steps_begun = 0;
        std::int64_t active_ns = 0;           // when its packet count last grew (or it was first seen)
        std::int64_t others_moved_ns = -1;    // when another stream first began a step after that (-1: not yet)
    };
    std::int64_t quiet_ns_;
    std::map<int, Seen> seen_;
    std::set<int> missing_;
};

}  // namespace slabcast
