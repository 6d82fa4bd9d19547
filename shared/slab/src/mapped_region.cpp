#include "slabcast/mapped_region.h"

#include <sys/mman.h>

#include <utility>

namespace slabcast {

MappedRegion::MappedRegion(MappedRegion&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), length_(std::exchange(o.length_, 0)) {}

MappedRegion& MappedRegion::operator=(MappedRegion&& o) noexcept {
    if (this != &o) {
        reset();
        base_ = std::exchange(o.base_, nullptr);
        length_ = std::exchange(o.length_, 0);
    }
    return *this;
}

MappedRegion::~MappedRegion() { reset(); }

MappedRegion MappedRegion::map(std::size_t length, int prot, int flags, int fd, off_t offset) {
    void* p = ::mmap(nullptr, length, prot, flags, fd, offset);
    if (p == MAP_FAILED) return MappedRegion();
    return MappedRegion(static_cast<std::uint8_t*>(p), length);
}

void MappedRegion::reset() {
    if (base_) ::munmap(base_, length_);
    base_ = nullptr;
    length_ = 0;
}

}  // namespace slabcast
