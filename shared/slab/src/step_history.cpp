#include "slabcast/step_history.h"

#include "slabcast/publication.h"

#include <algorithm>

namespace slabcast {

namespace {

// The publication number of a whole step's first slab: a step taken again
// from the same publications is the same step.
std::uint64_t first_publication(const StepChoice& c) {
    return c.buffers.empty() || !c.buffers.begin()->second.pin ? 0
                                                              : c.buffers.begin()->second.pin->publication().number;
}

}  // namespace

int StepHistory::depth_allowed(int wanted, int buffers) {
    // The most steps whose view, by the rule every reader is sized by, fits
    // the slab's buffers.
    int depth = std::max(0, wanted);
    while (depth > 0 && buffers_for_readers(ReaderMix{0, {depth}, 0}) > buffers) --depth;
    return depth;
}

void StepHistory::set_depth(int depth) {
    depth_ = std::max(0, depth);
    while (static_cast<int>(held_.size()) > depth_) held_.pop_front();
}

void StepHistory::take(const std::map<int, SlabMappingPtr>& slabs) {
    if (depth_ == 0) return;
    StepChoice newest = choose_whole_step(slabs);
    if (newest.step < 0 || !newest.whole || newest.buffers.size() != slabs.size()) return;
    if (!held_.empty() && held_.back().step == newest.step &&
        first_publication(held_.back()) == first_publication(newest))
        return;
    held_.erase(std::remove_if(held_.begin(), held_.end(), [&](const StepChoice& c) { return c.step == newest.step; }),
                held_.end());
    held_.push_back(std::move(newest));
    while (static_cast<int>(held_.size()) > depth_) held_.pop_front();
}

std::vector<std::int64_t> StepHistory::steps() const {
    std::vector<std::int64_t> out;
    for (const auto& c : held_) out.push_back(c.step);
    std::sort(out.begin(), out.end());
    return out;
}

const StepChoice* StepHistory::choose(std::optional<double> time) {
    if (held_.empty()) return nullptr;
    const bool moved = time && time != last_time_;
    last_time_ = time;
    if (!time || (following_ && !moved)) return &held_.back();
    // The held step at or below the time asked for, else the lowest.
    const StepChoice* at = nullptr;
    const StepChoice* lowest = &held_.front();
    for (const auto& c : held_) {
        if (c.step < lowest->step) lowest = &c;
        if (static_cast<double>(c.step) <= *time && (!at || c.step > at->step)) at = &c;
    }
    if (!at) at = lowest;
    if (moved) following_ = at == &held_.back();
    return following_ ? &held_.back() : at;
}

}  // namespace slabcast
