// A rank's extent that spans several slabs, without a copy: each slab's
// planes of the buffer shown mapped read-only once more, back to back, into
// one range of address space reserved for the extent, so the values read as
// one array while they stay where the receiver placed them. ParaView splits a
// volume into one z-range a rank; with fewer ranks than slabs each range
// spans several slabs, and a copy of it for every new step doubled a render
// rank's memory at 1024^3 (2 GiB of slabs, 2 GiB of copy: docs/performance.md,
// "Scale"). mmap places a file's pages only at page boundaries, so this is
// possible where a plane is a whole number of pages (nx*ny*4 bytes for the
// values, nx*ny for the ages: 32x32 points and up for values, 64x64 for ages)
// and the extent is whole planes; elsewhere the caller assembles a copy
// (extent_values.h).
#pragma once

#include "slabcast/extent_values.h"

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace slabcast {

// The stitched ranges a reader made for its last few steps, kept mapped
// (without their pins) so that a step shown again from the same buffers, as
// the receiver cycles its K buffers, reuses one: a fresh range's first frame
// faulted in its pages, 32 thousand faults and about 0.1 s a rank for 2 GiB
// (docs/performance.md, "Scale"). A range whose slab file was replaced (a
// new inode) is let go at the next map().
class StitchCache {
public:
    explicit StitchCache(std::size_t capacity = 8) : capacity_(capacity) {}
    std::size_t size() const;

private:
    friend class StitchedPlanes;
    struct Region {
        void* base = nullptr;
        std::size_t length = 0;
        Region() = default;
        Region(const Region&) = delete;
        Region& operator=(const Region&) = delete;
        ~Region();
    };
    // A run of planes mapped at once: where it lies in the range and where
    // in which slab file it comes from.
    struct Run {
        std::int64_t first_plane = 0, planes = 0;
        int slab = 0;
        unsigned long long device = 0, inode = 0;
        std::uint64_t offset = 0;
        bool operator==(const Run& o) const {
            return first_plane == o.first_plane && planes == o.planes && slab == o.slab && device == o.device &&
                   inode == o.inode && offset == o.offset;
        }
    };
    struct Key {
        bool values = true;  // else ages
        std::vector<Run> runs;
        bool operator==(const Key& o) const { return values == o.values && runs == o.runs; }
        bool operator!=(const Key& o) const { return !(*this == o); }
    };
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::list<std::pair<Key, std::shared_ptr<const Region>>> entries_;  // the most recently used first
};

class StitchedPlanes {
public:
    enum class Kind { Values, Ages };
    // The planes of `extent` (whole planes, x and y spanning the volume) from
    // each plane's slab buffer in `by_slab` (selection.planes), or nullptr
    // where that is not possible here (see above). Holds every source buffer,
    // its mapping and pin, for its own life. Throws std::runtime_error when a
    // file no longer covers its buffer, or the kernel refuses a mapping.
    // With `cache`, a range it holds for the same runs is used again.
    static std::shared_ptr<const StitchedPlanes> map(Kind kind, const SlabSelection& selection,
                                                     const std::map<int, SlabBuffer>& by_slab, const Dims& dims,
                                                     const int extent[6], StitchCache* cache = nullptr);
    // Whether map() can stitch `kind` for an extent of whole planes of `dims`.
    static bool possible(Kind kind, const Dims& dims);

    StitchedPlanes(const StitchedPlanes&) = delete;
    StitchedPlanes& operator=(const StitchedPlanes&) = delete;

    const void* data() const { return region_->base; }
    std::size_t bytes() const { return region_->length; }

private:
    StitchedPlanes() = default;
    std::shared_ptr<const StitchCache::Region> region_;
    std::vector<SlabBuffer> held_;  // declared after the range: unmapped (where not cached) before the pins go
};

}  // namespace slabcast
