// The values of a requested extent, as a reader hands them out: either a
// pointer straight into one slab's read-only mapping (zero copy), or a buffer
// of their own, page-aligned and mapped anonymously, assembled plane by plane
// from the slabs slab_selection.h picked. No VTK: the plugin wraps what comes
// out of here in vtkFloatArrays.
#pragma once

#include "slabcast/descriptor.h"
#include "slabcast/publication.h"
#include "slabcast/slab_pool.h"
#include "slabcast/slab_selection.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace slabcast {

// The slabs behind one extent, opened (or kept open) through `pool`.
struct ExtentSources {
    // The slabs the output's values come from: the zero-copy slab alone (its
    // ghost planes' owners are not opened), or every slab the assembly reads.
    std::map<int, SlabMappingPtr> by_slab;
    std::vector<SlabMappingPtr> used;  // the same mappings, ascending index
};
ExtentSources open_extent_sources(SlabPool& pool, const Descriptor& d, const std::string& descriptor_path,
                                  const SlabSelection& selection);

// One slab buffer an output reads from: the mapping, which buffer, and the
// pin that keeps the writer off it while anything points into it (null only
// where the buffer being written is shown as it fills).
struct SlabBuffer {
    SlabMappingPtr mapping;
    int buffer = 0;
    PinnedPublicationPtr pin;
    const float* values() const { return mapping->values(buffer); }
    const std::uint8_t* ages() const { return mapping->ages(buffer); }
};

// Throws std::runtime_error "<slab>: truncated under the reader" unless the
// file still covers every mapped byte: pages past a file's end fault (SIGBUS).
void require_not_truncated(const SlabMapping& m);

// Number of values in the point extent {x0, x1, y0, y1, z0, z1}.
std::int64_t extent_value_count(const int extent[6]);

// A level of detail: every `stride`-th point along each axis, a volume of
// strided_points(n, stride) points per axis of n. Point i of it is point
// stride * i of the volume; `fine` is the volume's extent that `extent` of
// the strided one spans.
void stride_extent(const int extent[6], int stride, int fine[6]);
int strided_points(std::int64_t points, int stride);

// The first value of plane `z0` in buffer `b` of its slab, which stores it
// (the selection's zero_copy_slab); the values of all planes up to the slab's
// last follow. Checks the file is still whole first.
const float* zero_copy_values(const SlabBuffer& b, const Dims& dims, std::int64_t z0);

// The age of the first value of plane `z0` in buffer `b` (as zero_copy_values).
const std::uint8_t* zero_copy_ages(const SlabBuffer& b, const Dims& dims, std::int64_t z0);

// A buffer of `count` floats (map_values) or bytes (map_ages) straight from
// mmap, page-aligned, given back with unmap_values (which has the type of
// vtkAbstractArray's free function). Throws std::runtime_error when the host
// has less memory than that.
float* map_values(std::int64_t count);
std::uint8_t* map_ages(std::int64_t count);
void unmap_values(void* values);

// A slab buffer's step with the values it lost filled again from coarser
// samples of the same step (fill_from_coarser, slabcast/progressive_rows.h),
// in memory of its own: the reader's "Fill: nearest" over a step the receiver
// filled from the step before (docs/shared-memory.md, "Holes and ages").
struct FilledSlab {
    std::vector<float> values;
    std::vector<std::uint8_t> ages;
};
using FilledSlabs = std::map<int, FilledSlab>;
// The slabs of `by_slab` whose buffer lost values (an age not 0), filled so;
// the others are left out, as there is nothing to fill.
FilledSlabs fill_slabs_from_coarser(const std::map<int, SlabBuffer>& by_slab);

// Copies `extent` into `out` (extent_value_count(extent) floats, x fastest)
// from each plane's source slab buffer in `by_slab`, or from its copy in
// `filled` where there is one. Checks every file is still whole first. With
// a `stride` > 1, `extent` is a stride_extent's `fine` one, the selection a
// select_strided_slabs one, and every stride-th row and value of each
// selected plane is copied.
void assemble_extent(const SlabSelection& selection, const std::map<int, SlabBuffer>& by_slab,
                     const Dims& dims, const int extent[6], float* out, const FilledSlabs& filled = {},
                     int stride = 1);
// The same for the values' ages.
void assemble_ages(const SlabSelection& selection, const std::map<int, SlabBuffer>& by_slab, const Dims& dims,
                   const int extent[6], std::uint8_t* out, const FilledSlabs& filled = {}, int stride = 1);

}  // namespace slabcast
