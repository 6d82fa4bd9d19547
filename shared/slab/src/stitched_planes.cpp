#include "slabcast/stitched_planes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace slabcast {

namespace {
std::uint64_t page_bytes() { return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

std::uint64_t plane_bytes(StitchedPlanes::Kind kind, const Dims& dims) {
    return static_cast<std::uint64_t>(dims.plane()) * (kind == StitchedPlanes::Kind::Values ? sizeof(float) : 1);
}
}  // namespace

bool StitchedPlanes::possible(Kind kind, const Dims& dims) { return plane_bytes(kind, dims) % page_bytes() == 0; }

std::shared_ptr<const StitchedPlanes> StitchedPlanes::map(Kind kind, const SlabSelection& selection,
                                                          const std::map<int, SlabBuffer>& by_slab,
                                                          const Dims& dims, const int extent[6]) {
    const bool whole_planes = extent[0] == 0 && extent[1] == dims.nx - 1 && extent[2] == 0 && extent[3] == dims.ny - 1;
    const std::int64_t planes = std::int64_t{extent[5]} - extent[4] + 1;
    if (!whole_planes || !possible(kind, dims) || planes < 1 ||
        selection.planes.size() != static_cast<std::size_t>(planes))
        return nullptr;
    const std::uint64_t plane = plane_bytes(kind, dims);
    std::shared_ptr<StitchedPlanes> s(new StitchedPlanes);
    s->length_ = static_cast<std::size_t>(plane * static_cast<std::uint64_t>(planes));
    // Address space only, until each slab's planes are mapped over it.
    void* base = ::mmap(nullptr, s->length_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        throw std::runtime_error("cannot reserve " + std::to_string(s->length_ >> 20) + " MiB of address space for "
                                 "the extent: " + std::strerror(errno));
    s->base_ = base;
    // Runs of consecutive planes from one slab, each mapped at once.
    for (std::int64_t i = 0; i < planes;) {
        const int slab = selection.planes[static_cast<std::size_t>(i)].slab;
        std::int64_t n = 1;
        while (i + n < planes && selection.planes[static_cast<std::size_t>(i + n)].slab == slab) ++n;
        const auto source = by_slab.find(slab);
        if (source == by_slab.end()) throw std::runtime_error("stitched extent: slab " + std::to_string(slab) + " not open");
        const SlabBuffer& b = source->second;
        require_whole(*b.mapping);
        const std::int64_t first = selection.planes[static_cast<std::size_t>(i)].z - b.mapping->geometry().stored_z_begin;
        const std::uint64_t offset = (kind == Kind::Values ? b.mapping->values_offset(b.buffer)
                                                           : b.mapping->ages_offset(b.buffer)) +
                                     static_cast<std::uint64_t>(first) * plane;
        void* at = static_cast<std::uint8_t*>(base) + static_cast<std::uint64_t>(i) * plane;
        if (::mmap(at, static_cast<std::size_t>(plane * static_cast<std::uint64_t>(n)), PROT_READ,
                   MAP_SHARED | MAP_FIXED, b.mapping->fd(), static_cast<off_t>(offset)) == MAP_FAILED)
            throw std::runtime_error(b.mapping->path() + ": cannot map its planes into the extent: " +
                                     std::strerror(errno));
        s->held_.push_back(b);
        i += n;
    }
    return s;
}

StitchedPlanes::~StitchedPlanes() {
    if (base_) ::munmap(base_, length_);
}

}  // namespace slabcast
