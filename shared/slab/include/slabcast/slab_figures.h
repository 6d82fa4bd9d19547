// What a stream monitor shows of one slab: the receiver's live counters and
// the step a renderer shows, read from the slab's header in shared memory (no
// VTK, no Qt). The SC11 booth showed the link's rate beside the picture
// (Balman et al., 2012, section 4); the plugin's stream panel gathers these
// from every rank and shows them beside the render view.
#pragma once

#include "slabcast/publication.h"
#include "slabcast/slab_file.h"
#include "slabcast/slab_pool.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace slabcast {

struct SlabFigures {
    int slab = -1;
    std::string host;                 // where the slab's file is
    std::int64_t shown_step = -1;     // the step a renderer on that host shows, -1 none
    double shown_age_ms = -1;         // now minus that step's publication, -1 none
    double shown_completeness = 0;    // records / expected of that step
    std::int64_t writing_step = -1;   // being received, -1 between steps
    std::int64_t last_step = -1;      // last finished (published) step
    double last_step_loss_percent = 0;
    double gbps = 0;                  // the receiver's rate over its last status second
    std::int64_t rate_ns = 0;         // when that rate was measured (CLOCK_REALTIME), 0 never
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
    std::uint64_t rejected = 0;
    std::uint64_t stale = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t dropped_steps = 0;
    std::uint64_t repaired = 0;    // FEC: datagrams rebuilt from parity, all steps
    std::uint64_t unrepaired = 0;  // FEC: datagrams lost beyond repair, all steps
    bool receiving = false;           // a receiver owns the slab now
    // No buffer holds a published step (each is being written, or none was
    // ever published): a reader showing whole steps has nothing of this slab
    // to show, nor of the volume.
    bool no_step = false;
    std::int64_t last_published_step = -1;  // its newest publication, in a buffer taken since; -1 none
    std::int64_t last_published_ns = 0;     // when it was published (CLOCK_REALTIME), 0 never
    // That publication's sent->published: from its sender's step stamp (the
    // sender's clock) to its publication, in ms; -1 not known.
    double latency_ms = -1;
    // The slab's buffers, how many readers pinned as its last step began, and
    // the most they ever did: at buffers - 1 the next pin drops a step.
    int buffers = 0;
    int pinned = 0;
    int pinned_peak = 0;
    // Who pins its buffers now, and which steps (reader_pins.h); only where
    // asked for (the stream monitor), empty elsewhere.
    std::string readers;
    bool buffers_nearly_all_pinned() const { return buffers > 1 && pinned_peak >= buffers - 1; }
};

// The figures in `header` (read with SlabMapping::read_header), for slab
// `shown_step` shown (-1: none) from publication record `shown` (nullptr: not
// known), at CLOCK_REALTIME `now_ns`.
SlabFigures slab_figures(const SlabHeader& header, std::int64_t shown_step, const Publication* shown,
                         std::int64_t now_ns);

// What a reader and the stream monitor say of a slab with no_step: which
// slab, and since when ("slab 2 holds no published step: every buffer is
// being written; its last, step 41, was published 12.3 s ago").
std::string no_step_text(const SlabFigures& f, std::int64_t now_ns);

// The figures of the slabs of `slabs` that hold no published step (their
// headers read now); none when each holds one, or when none has ever
// published a step (the stream has not begun: an empty output says enough).
std::vector<SlabFigures> slabs_without_step(const std::map<int, SlabMappingPtr>& slabs, std::int64_t now_ns);

// All slabs' figures in one row: rates and counters summed, the steps shown and
// received the lowest (the slab furthest behind), the loss of the last finished
// step over all slabs (each weighted alike), the oldest step age, the longest
// latency.
SlabFigures total_figures(const std::vector<SlabFigures>& slabs);

// Merges `from` into `into` by slab index (a slab seen by two ranks on one
// host is one slab: the entry with a step shown wins, then the newer rate).
void merge_figures(std::vector<SlabFigures>& into, const std::vector<SlabFigures>& from);

}  // namespace slabcast
