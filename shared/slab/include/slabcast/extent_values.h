// The values of a requested extent, as a reader hands them out: either a
// pointer straight into one slab's read-only mapping (zero copy), or a buffer
// of their own, page-aligned and mapped anonymously, assembled plane by plane
// from the slabs slab_selection.h picked. No VTK: the plugin wraps what comes
// out of here in vtkFloatArrays.
#pragma once

#include "slabcast/descriptor.h"
#include "slabcast/slab_pool.h"
#include "slabcast/slab_selection.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace slabcast {

// The slabs behind one extent, opened (or kept open) through `pool`.
struct ExtentSources {
    std::map<int, SlabMappingPtr> by_slab;  // every slab the selection names
    // The slabs the output's values come from, ascending index: the zero-copy
    // slab alone, or every slab the assembly reads.
    std::vector<SlabMappingPtr> used;
};
ExtentSources open_extent_sources(SlabPool& pool, const Descriptor& d, const std::string& descriptor_path,
                                  const SlabSelection& selection);

// Throws std::runtime_error "<slab>: truncated under the reader" unless the
// file still covers every mapped byte: pages past a file's end fault (SIGBUS).
void require_whole(const SlabMapping& m);

// Number of values in the point extent {x0, x1, y0, y1, z0, z1}.
std::int64_t extent_value_count(const int extent[6]);

// The first value of plane `z0` in slab `m`, which stores it (the selection's
// zero_copy_slab); the values of all planes up to the slab's last follow.
// Checks the file is still whole first.
const float* zero_copy_values(const SlabMapping& m, const Dims& dims, std::int64_t z0);

// A buffer of `count` floats straight from mmap, page-aligned, given back with
// unmap_values (which has the type of vtkAbstractArray's free function).
// Throws std::runtime_error when the host has less memory than that.
float* map_values(std::int64_t count);
void unmap_values(void* values);

// Copies `extent` into `out` (extent_value_count(extent) floats, x fastest)
// from each plane's source slab in `by_slab`. Checks every file is still whole
// first.
void assemble_extent(const SlabSelection& selection, const std::map<int, SlabMappingPtr>& by_slab,
                     const Dims& dims, const int extent[6], float* out);

}  // namespace slabcast
