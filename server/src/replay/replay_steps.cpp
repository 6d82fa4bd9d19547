#include "replay/replay_steps.h"

#include "slabcast/units.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace slabcast {

double parse_replay_speed(const std::string& text) {
    if (text == "max") return 0;
    try {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used == text.size() && std::isfinite(v) && v > 0 && v <= 1e6) return v;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument("speed '" + text + "': expected max or a number above 0 (1: as recorded)");
}

std::vector<ReplayStep> replay_schedule(const Dataset& d, double speed) {
    std::vector<ReplayStep> out;
    if (speed <= 0) {
        for (const auto& s : d.steps) out.push_back({&s, 0});
        return out;
    }
    // Each step sent when the receiver began it: then it publishes each step
    // when the recorded receiver did, whether that was as its last value came
    // or, for a step that lost some, as the next began. A recording that did
    // not see some step begin is paced by the publications instead.
    bool started = true;
    for (const auto& s : d.steps) {
        if (!s.recorded || s.recorded->published_ns <= 0)
            throw std::runtime_error(d.directory + ": step " + std::to_string(s.number) +
                                     " has no recorded time (not a recording?): replay it with --speed max");
        started = started && s.recorded->started_ns > 0;
    }
    const auto time_of = [started](const DatasetStep& s) {
        return started ? s.recorded->started_ns : s.recorded->published_ns;
    };
    for (const auto& s : d.steps) {
        const double offset = static_cast<double>(time_of(s) - time_of(d.steps.front())) / speed;
        // A step re-recorded later (listed last, with its newer time) is
        // never before the one listed ahead of it.
        out.push_back({&s, std::max<std::int64_t>(out.empty() ? 0 : out.back().offset_ns,
                                                  static_cast<std::int64_t>(std::llround(offset)))});
    }
    return out;
}

StepVolume::StepVolume(const Dims& dims)
    : dims_(dims),
      values_(new float[static_cast<std::size_t>(dims.count())]),
      ages_(new std::uint8_t[static_cast<std::size_t>(dims.count())]) {
    // Touched once now: no step pays first-touch page faults.
    std::memset(values_.get(), 0, static_cast<std::size_t>(dims.count()) * sizeof(float));
    std::memset(ages_.get(), 0, static_cast<std::size_t>(dims.count()));
}

void StepVolume::load(const Dataset& d, const DatasetStep& s, bool ages) {
    read_step_planes(d.step_path(s), s.codec, d.dims, sizeof(float), 0, d.dims.nz, values_.get());
    if (!ages) return;
    if (s.ages.empty()) std::memset(ages_.get(), 0, static_cast<std::size_t>(d.dims.count()));
    else read_step_planes(d.directory + "/" + s.ages, s.codec, d.dims, 1, 0, d.dims.nz, ages_.get());
}

}  // namespace slabcast
