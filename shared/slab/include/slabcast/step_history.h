// A live reader's last N whole steps, each pinned on every slab, so that
// ParaView's time controls can step back through them while the stream goes
// on (the reader's History property). The steps stay in the receiver's own
// buffers: the reader copies nothing, and the receiver needs N + 2 buffers a
// slab (`receive --buffers`), one to write the next step into and one spare,
// or it drops steps (docs/shared-memory.md).
#pragma once

#include "slabcast/step_choice.h"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace slabcast {

class StepHistory {
public:
    // Steps a slab of `buffers` buffers lets a view keep, at most `wanted`:
    // its N steps and the frame before, and one buffer for the receiver to
    // write into (buffers_for_readers: buffers - 2).
    static int depth_allowed(int wanted, int buffers);

    // Keeps at most `depth` steps (0: none, and everything held lets go).
    void set_depth(int depth);
    int depth() const { return depth_; }

    // Pins the newest step every slab of `slabs` holds and keeps it, unless it
    // is the one already newest; a step number heard again replaces its older
    // recording; the oldest beyond the depth let go.
    void take(const std::map<int, SlabMappingPtr>& slabs);

    // The held steps' numbers, ascending (a stream that went round its steps
    // may have taken them in another order): the reader's time steps.
    std::vector<std::int64_t> steps() const;

    // The step to show for time `time` (nullopt: none asked for): the newest
    // while following the stream, which it does until a time other than the
    // last asked picks an older step, and again once a time picks the newest;
    // otherwise the held step at or below the time (the first when below all).
    // nullptr when nothing is held.
    const StepChoice* choose(std::optional<double> time);
    bool following() const { return following_; }

private:
    int depth_ = 0;
    std::deque<StepChoice> held_;  // arrival order, newest last
    bool following_ = true;
    std::optional<double> last_time_;
};

}  // namespace slabcast
