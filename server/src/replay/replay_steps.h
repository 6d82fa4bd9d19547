// What `slabcast replay` sends, and when: a recording's steps in the order
// they arrived, each at its recorded distance from the first (when the
// receiver began it, else when it published it), over the speed asked for;
// and the step in memory, decoded once into buffers allocated once
// (slabcast/step_file.h).
#pragma once

#include "slabcast/dataset.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace slabcast {

struct ReplayStep {
    const DatasetStep* step = nullptr;
    std::int64_t offset_ns = 0;  // from the replay's start; 0 for every step at --speed max
};

// "max" -> 0 (as fast as they go), else a positive number (1: as recorded).
// Throws std::invalid_argument naming the text.
double parse_replay_speed(const std::string& text);

// The steps of `d` in its list's order (a recording's: arrival order). At a
// speed > 0 each step needs its recorded publication time: a dataset that is
// not a recording is refused with std::runtime_error naming the step.
std::vector<ReplayStep> replay_schedule(const Dataset& d, double speed);

class StepVolume {
public:
    explicit StepVolume(const Dims& dims);
    // Reads a step's values and, with `ages`, its ages (every age 0 when it has none).
    void load(const Dataset& d, const DatasetStep& s, bool ages);
    const float* values() const { return values_.get(); }
    const std::uint8_t* ages() const { return ages_.get(); }

private:
    Dims dims_;
    std::unique_ptr<float[]> values_;
    std::unique_ptr<std::uint8_t[]> ages_;
};

}  // namespace slabcast
