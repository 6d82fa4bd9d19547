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

StitchCache::Region::~Region() {
    if (base) ::munmap(base, length);
}

std::size_t StitchCache::size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

std::shared_ptr<const StitchedPlanes> StitchedPlanes::map(Kind kind, const SlabSelection& selection,
                                                          const std::map<int, SlabBuffer>& by_slab,
                                                          const Dims& dims, const int extent[6], StitchCache* cache) {
    const bool whole_planes = extent[0] == 0 && extent[1] == dims.nx - 1 && extent[2] == 0 && extent[3] == dims.ny - 1;
    const std::int64_t planes = std::int64_t{extent[5]} - extent[4] + 1;
    if (!whole_planes || !possible(kind, dims) || planes < 1 ||
        selection.planes.size() != static_cast<std::size_t>(planes))
        return nullptr;
    const std::uint64_t plane = plane_bytes(kind, dims);
    // Runs of consecutive planes from one slab, each mapped at once; their
    // buffers held (s->held_, one a run) for the range's life.
    std::shared_ptr<StitchedPlanes> s(new StitchedPlanes);
    StitchCache::Key key{kind == Kind::Values, {}};
    for (std::int64_t i = 0; i < planes;) {
        const int slab = selection.planes[static_cast<std::size_t>(i)].slab;
        std::int64_t n = 1;
        while (i + n < planes && selection.planes[static_cast<std::size_t>(i + n)].slab == slab) ++n;
        const auto source = by_slab.find(slab);
        if (source == by_slab.end()) throw std::runtime_error("stitched extent: slab " + std::to_string(slab) + " not open");
        const SlabBuffer& b = source->second;
        require_not_truncated(*b.mapping);
        const std::int64_t first = selection.planes[static_cast<std::size_t>(i)].z - b.mapping->geometry().stored_z_begin;
        const std::uint64_t offset = (kind == Kind::Values ? b.mapping->values_offset(b.buffer)
                                                           : b.mapping->ages_offset(b.buffer)) +
                                     static_cast<std::uint64_t>(first) * plane;
        key.runs.push_back(StitchCache::Run{i, n, slab, b.mapping->device(), b.mapping->inode(), offset});
        s->held_.push_back(b);
        i += n;
    }
    if (cache) {
        std::lock_guard<std::mutex> lock(cache->mutex_);
        // Let go of ranges over a slab file since replaced: they would keep its pages.
        cache->entries_.remove_if([&](const auto& e) {
            for (const StitchCache::Run& r : e.first.runs) {
                const auto open = by_slab.find(r.slab);
                if (open != by_slab.end() &&
                    (open->second.mapping->device() != r.device || open->second.mapping->inode() != r.inode))
                    return true;
            }
            return false;
        });
        for (auto e = cache->entries_.begin(); e != cache->entries_.end(); ++e) {
            if (e->first != key) continue;
            cache->entries_.splice(cache->entries_.begin(), cache->entries_, e);
            s->region_ = e->second;
            return s;
        }
    }
    auto region = std::make_shared<StitchCache::Region>();
    region->length = static_cast<std::size_t>(plane * static_cast<std::uint64_t>(planes));
    // Address space only, until each slab's planes are mapped over it.
    void* base = ::mmap(nullptr, region->length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        throw std::runtime_error("cannot reserve " + std::to_string(region->length >> 20) + " MiB of address space "
                                 "for the extent: " + std::strerror(errno));
    region->base = base;
    for (std::size_t k = 0; k < key.runs.size(); ++k) {
        const StitchCache::Run& r = key.runs[k];
        const SlabMapping& m = *s->held_[k].mapping;
        void* at = static_cast<std::uint8_t*>(base) + static_cast<std::uint64_t>(r.first_plane) * plane;
        if (::mmap(at, static_cast<std::size_t>(plane * static_cast<std::uint64_t>(r.planes)), PROT_READ,
                   MAP_SHARED | MAP_FIXED, m.fd(), static_cast<off_t>(r.offset)) == MAP_FAILED)
            throw std::runtime_error(m.path() + ": cannot map its planes into the extent: " + std::strerror(errno));
    }
    s->region_ = region;
    if (cache) {
        std::lock_guard<std::mutex> lock(cache->mutex_);
        cache->entries_.emplace_front(std::move(key), std::move(region));
        while (cache->entries_.size() > cache->capacity_) cache->entries_.pop_back();
    }
    return s;
}

}  // namespace slabcast
