#include "slabcast/extent_values.h"

#include "slabcast/progressive_rows.h"
#include "slabcast/volume.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

namespace slabcast {

ExtentSources open_extent_sources(SlabPool& pool, const Descriptor& d, const std::string& descriptor_path,
                                  const SlabSelection& selection) {
    // A zero-copy piece reads its one slab alone, ghost planes included: the
    // owners of those ghost planes are not opened, so the step it shows is
    // chosen, pinned and agreed on that slab only and a neighbour's lag cannot
    // hold it back (or empty it).
    std::set<int> needed;
    if (selection.zero_copy_slab >= 0) {
        needed.insert(selection.zero_copy_slab);
    } else {
        for (const auto& p : selection.planes) needed.insert(p.slab);
    }
    ExtentSources s;
    for (const auto& e : d.slabs) {
        if (needed.count(e.index)) s.by_slab[e.index] = pool.get(d, descriptor_path, e);
    }
    for (const auto& kv : s.by_slab) s.used.push_back(kv.second);
    return s;
}

void require_not_truncated(const SlabMapping& m) {
    if (!m.not_truncated()) throw std::runtime_error(m.path() + ": truncated under the reader (the file shrank)");
}

void stride_extent(const int extent[6], int stride, int fine[6]) {
    for (int i = 0; i < 6; ++i) fine[i] = extent[i] * stride;
}

int strided_points(std::int64_t points, int stride) { return static_cast<int>((points - 1) / stride + 1); }

std::int64_t extent_value_count(const int extent[6]) {
    return std::int64_t{extent[1] - extent[0] + 1} * (extent[3] - extent[2] + 1) * (extent[5] - extent[4] + 1);
}

const float* zero_copy_values(const SlabBuffer& b, const Dims& dims, std::int64_t z0) {
    // The pages are handed out as they are: the file must still cover them.
    require_not_truncated(*b.mapping);
    return b.values() + (z0 - b.mapping->geometry().stored_z_begin) * dims.plane();
}

const std::uint8_t* zero_copy_ages(const SlabBuffer& b, const Dims& dims, std::int64_t z0) {
    require_not_truncated(*b.mapping);
    return b.ages() + (z0 - b.mapping->geometry().stored_z_begin) * dims.plane();
}

// The memory of a copied extent comes straight from mmap and goes back with
// munmap. Through malloc, glibc's adaptive threshold moves such blocks (8 MiB
// for a 128^3 volume, one per new step) from mmap into the heap after the
// first few frees, and a renderer's private memory then rose by a block's size
// during a soak (docs/performance.md, "Soak"). The first page holds the
// mapping's length, so the values stay page-aligned.
// Not a MappedRegion: the buffer's ownership passes to VTK, whose array free
// function is handed the values' pointer alone, so the length travels in the
// first page and unmap_values finds it there.
namespace {
constexpr std::size_t kPage = 4096;
}

void unmap_values(void* values) {
    auto* base = static_cast<std::uint8_t*>(values) - kPage;
    std::size_t length = 0;
    std::memcpy(&length, base, sizeof length);
    ::munmap(base, length);
}

namespace {
void* map_bytes(std::size_t bytes) {
    const std::size_t length = kPage + bytes;
    const std::size_t memory =
        static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (length > memory) {
        throw std::runtime_error("the copied extent needs " + std::to_string(length >> 20) +
                                 " MiB, more than this host's " + std::to_string(memory >> 20) + " MiB of memory");
    }
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw std::runtime_error("cannot allocate " + std::to_string(length >> 20) + " MiB for the copied extent");
    std::memcpy(p, &length, sizeof length);
    return static_cast<std::uint8_t*>(p) + kPage;
}
}  // namespace

float* map_values(std::int64_t count) {
    return static_cast<float*>(map_bytes(static_cast<std::size_t>(count) * sizeof(float)));
}

std::uint8_t* map_ages(std::int64_t count) { return static_cast<std::uint8_t*>(map_bytes(static_cast<std::size_t>(count))); }

// One copy per plane when the extent has whole rows, one per row otherwise.
// Through the mappings, once fstat has found each file whole (pread would close
// the last window in which a file cut short by someone else faults, but
// copies about three times slower).
namespace {
template <class T, class Base>
void assemble(const SlabSelection& selection, const std::map<int, SlabBuffer>& by_slab, const Dims& dims,
              const int extent[6], T* out, Base base, int stride) {
    for (const auto& kv : by_slab) require_not_truncated(*kv.second.mapping);
    if (stride > 1) {  // every stride-th value of every stride-th row of the selection's planes
        for (const PlaneSource& plane : selection.planes) {
            const SlabBuffer& b = by_slab.at(plane.slab);
            const T* first = base(plane.slab, b);
            for (int y = extent[2]; y <= extent[3]; y += stride) {
                const T* row = first + slab_offset(dims, b.mapping->geometry(), extent[0], y, plane.z);
                for (int x = 0; x <= extent[1] - extent[0]; x += stride) *out++ = row[x];
            }
        }
        return;
    }
    // base(slab, buffer): the slab's first stored value.
    const std::int64_t row_length = extent[1] - extent[0] + 1;
    const std::int64_t rows = extent[3] - extent[2] + 1;
    const bool whole_rows = row_length == dims.nx;
    const std::int64_t run = whole_rows ? row_length * rows : row_length;
    for (int z = extent[4]; z <= extent[5]; ++z) {
        const int slab = selection.planes[z - extent[4]].slab;
        const SlabBuffer& b = by_slab.at(slab);
        const SlabGeometry& g = b.mapping->geometry();
        const T* first = base(slab, b);
        for (int y = extent[2]; y <= extent[3]; y += whole_rows ? static_cast<int>(rows) : 1) {
            std::memcpy(out, first + slab_offset(dims, g, extent[0], y, z), static_cast<std::size_t>(run) * sizeof(T));
            out += run;
        }
    }
}
}  // namespace

void assemble_extent(const SlabSelection& selection, const std::map<int, SlabBuffer>& by_slab,
                     const Dims& dims, const int extent[6], float* out, const FilledSlabs& filled, int stride) {
    assemble(selection, by_slab, dims, extent, out, [&](int slab, const SlabBuffer& b) {
        const auto f = filled.find(slab);
        return f != filled.end() ? f->second.values.data() : b.values();
    }, stride);
}

void assemble_ages(const SlabSelection& selection, const std::map<int, SlabBuffer>& by_slab, const Dims& dims,
                   const int extent[6], std::uint8_t* out, const FilledSlabs& filled, int stride) {
    assemble(selection, by_slab, dims, extent, out, [&](int slab, const SlabBuffer& b) {
        const auto f = filled.find(slab);
        return f != filled.end() ? f->second.ages.data() : b.ages();
    }, stride);
}

FilledSlabs fill_slabs_from_coarser(const std::map<int, SlabBuffer>& by_slab) {
    FilledSlabs filled;
    for (const auto& [slab, b] : by_slab) {
        require_not_truncated(*b.mapping);
        const auto count = static_cast<std::ptrdiff_t>(b.mapping->value_count());
        if (std::all_of(b.ages(), b.ages() + count, [](std::uint8_t a) { return a == 0; })) continue;
        const SlabGeometry& g = b.mapping->geometry();
        const Dims& dims = b.mapping->dims();
        FilledSlab& f = filled[slab];
        f.values.assign(b.values(), b.values() + count);
        f.ages.assign(b.ages(), b.ages() + count);
        // The slab's rows and their parents: sized by the validated header (slab_header_problem).
        const ProgressiveRows rows(dims.ny, g.owned_planes(), g.ghost_planes());
        fill_from_coarser(rows, dims.nx, f.values.data(), f.ages.data());
    }
    return filled;
}

}  // namespace slabcast
