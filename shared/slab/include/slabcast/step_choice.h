// Which buffer of each slab an output shows. "Whole steps" (the default): the
// newest step that every slab the output reads has published, pinned on each,
// so the frame is one real step everywhere; with several ranks, a step agreed
// between them (the reader's Refresh) instead. "Newest data": each slab's
// buffer being written, as it fills, unpinned (docs/shared-memory.md, "Buffers
// and publication"; plugin/README.md says what a frame shows in each mode).
#pragma once

#include "slabcast/extent_values.h"
#include "slabcast/publication.h"
#include "slabcast/slab_pool.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace slabcast {

struct StepChoice {
    std::int64_t step = -1;             // the step shown (Newest data: the lowest of them); -1 none
    std::map<int, SlabBuffer> buffers;  // by slab index: one buffer each, or none before anything was published
    bool whole = false;                 // every buffer is a publication of `step`, pinned
};

// The newest step every slab in `slabs` holds published, pinned on each.
// A writer may take a buffer between the look and the pin: then it looks
// again (a few times); nothing in common: an empty choice (step -1).
StepChoice choose_whole_step(const std::map<int, SlabMappingPtr>& slabs);
// Step `step` on every slab in `slabs`, pinned, reusing the pins of `held`
// (a choice made earlier, e.g. at the ranks' agreement) where they match;
// nullopt when some slab no longer holds it.
std::optional<StepChoice> choose_step(const std::map<int, SlabMappingPtr>& slabs, std::int64_t step,
                                      const std::map<int, PinnedPublicationPtr>& held = {});
// Each slab's buffer being written, or its newest publication between steps.
StepChoice choose_newest_data(const std::map<int, SlabMappingPtr>& slabs);

// What the ranks agree on (the reader's Refresh): each held step of the slabs
// a rank sees, with the time its oldest publication among them was made.
// Steps that not every slab holds are left out.
struct HeldStep {
    std::int64_t step = -1;
    std::int64_t oldest_published_ns = 0;
};
std::vector<HeldStep> steps_held_by_all(const std::map<int, SlabMappingPtr>& slabs);
// Of the steps every rank listed (`per_rank`, one list per rank), the one
// published last everywhere (the largest oldest-publication time); nullopt
// when they have none in common. Every rank computes the same answer from
// the same lists.
std::optional<std::int64_t> agreed_step(const std::vector<std::vector<HeldStep>>& per_rank);

}  // namespace slabcast
