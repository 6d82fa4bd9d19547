// A rank's extent that spans several slabs, without a copy: each slab's
// planes of the buffer shown mapped read-only once more, back to back, into
// one range of address space reserved for the extent, so the values read as
// one array while they stay where the receiver placed them. ParaView splits a
// volume into one z-range a rank; with fewer ranks than slabs each range
// spans several slabs, and a copy of it for every new step doubled a render
// rank's memory at 1024^3 (2 GiB of slabs, 2 GiB of copy: docs/performance.md,
// section 16). mmap places a file's pages only at page boundaries, so this is
// possible where a plane is a whole number of pages (nx*ny*4 bytes for the
// values, nx*ny for the ages: 32x32 points and up for values, 64x64 for ages)
// and the extent is whole planes; elsewhere the caller assembles a copy
// (extent_values.h).
#pragma once

#include "slabcast/extent_values.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace slabcast {

class StitchedPlanes {
public:
    enum class Kind { Values, Ages };
    // The planes of `extent` (whole planes, x and y spanning the volume) from
    // each plane's slab buffer in `by_slab` (selection.planes), or nullptr
    // where that is not possible here (see above). Holds every source buffer,
    // its mapping and pin, for its own life. Throws std::runtime_error when a
    // file no longer covers its buffer, or the kernel refuses a mapping.
    static std::shared_ptr<const StitchedPlanes> map(Kind kind, const SlabSelection& selection,
                                                     const std::map<int, SlabBuffer>& by_slab, const Dims& dims,
                                                     const int extent[6]);
    // Whether map() can stitch `kind` for an extent of whole planes of `dims`.
    static bool possible(Kind kind, const Dims& dims);

    ~StitchedPlanes();
    StitchedPlanes(const StitchedPlanes&) = delete;
    StitchedPlanes& operator=(const StitchedPlanes&) = delete;

    const void* data() const { return base_; }
    std::size_t bytes() const { return length_; }

private:
    StitchedPlanes() = default;
    void* base_ = nullptr;
    std::size_t length_ = 0;
    std::vector<SlabBuffer> held_;  // declared after the range: unmapped before the pins go
};

}  // namespace slabcast
