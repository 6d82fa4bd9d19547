// How long a step drawn in place may hold its buffers. A frame that shows a
// step without a copy pins that step's buffer on every slab it reads until
// the next frame; with 3 buffers a slab that leaves the newest publication
// and one buffer to write into. Under an unpaced stream each slab then holds
// only the shown step and its own newest, the slabs' newest rarely agree, and
// the shown step stays the only one they all hold while every slab drops
// steps. So a step chosen again while some slab it reads has published
// kPublicationsOn times since it was first shown is not held in place: the
// reader copies it, the copy lets go of the buffers, and with them free the
// slabs come to a newer step in common. A paced stream never gets there: its
// slabs publish once a step, and the frame moves on with them.
#pragma once

#include "slabcast/extent_values.h"

#include <cstdint>
#include <map>

namespace slabcast {

// Buffers a slab needs for a frame to hold its step in place at all: the
// frame's, the newest publication and one for the receiver to write into;
// with fewer the receiver would drop every step meanwhile, so the reader
// copies the step instead.
constexpr int kBuffersToHoldInPlace = 3;

class InPlaceHold {
public:
    static constexpr std::uint64_t kPublicationsOn = 8;
    // Whether the step chosen (`buffers`, pinned publications, by slab) may
    // be shown in place. Called once an output, with what it shows.
    bool may_hold(const std::map<int, SlabBuffer>& buffers);

private:
    std::map<int, std::uint64_t> shown_;     // by slab: the publication number shown
    std::map<int, std::uint64_t> then_;      // by slab: its newest publication number when first shown
};

}  // namespace slabcast
