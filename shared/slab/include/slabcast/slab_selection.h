// Which slab supplies each plane of a requested extent. Pure index math, no
// mapping: a reader decides here between handing out one slab's memory as is
// (zero copy) and assembling the extent plane by plane (extent_values.h).
#pragma once

#include "slabcast/descriptor.h"

#include <string>
#include <vector>

namespace slabcast {

struct PlaneSource {
    int slab = 0;        // slab whose stored planes hold this plane
    bool ghost = false;  // true: taken from that slab's ghost copy (owner not on this host)
    int z = 0;           // the volume's plane read
};

struct SlabSelection {
    // >= 0: the whole extent is one contiguous run of a single slab's stored
    // values (full rows and columns, planes inside its stored range), so the
    // output can point into that slab's mapping. -1 otherwise.
    int zero_copy_slab = -1;
    std::vector<PlaneSource> planes;  // one per plane z0..z1 of the extent
};

// `extent` is a non-empty point extent inside the volume, laid out as VTK's
// {x0, x1, y0, y1, z0, z1} (inclusive). Throws std::runtime_error naming the
// descriptor, the missing slab and its expected file when a plane is stored by
// no slab this host holds.
SlabSelection select_slabs(const Descriptor& d, const std::string& descriptor_path, const int extent[6]);

// The same for `extent` of the volume at a level of detail (every `stride`-th
// point, extent_values.h's stride_extent): one plane per plane of `extent`,
// plane stride * z of the volume. A piece's first plane may lie in a slab on
// another host (pieces share their boundary plane, and the ghost plane below
// a slab is one plane, not `stride`); the nearest plane this host stores, at
// most stride - 1 away, stands in. Never zero copy.
SlabSelection select_strided_slabs(const Descriptor& d, const std::string& descriptor_path, const int extent[6],
                                   int stride);

}  // namespace slabcast
