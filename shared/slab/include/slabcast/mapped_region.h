// The one owner of a memory mapping (a slab, a staged step, the mover's block
// ring): unmapped exactly once, on destruction or reset; a moved-from region
// is empty. Slabs and staged steps are handed to readers as mappings, not
// copies (Balman et al., 2012, section 4.2), so many objects hold one.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace slabcast {

class MappedRegion {
public:
    MappedRegion() = default;
    MappedRegion(MappedRegion&& o) noexcept;
    MappedRegion& operator=(MappedRegion&& o) noexcept;
    MappedRegion(const MappedRegion&) = delete;
    MappedRegion& operator=(const MappedRegion&) = delete;
    ~MappedRegion();

    // mmap(2) of `length` bytes (`fd` -1 with MAP_ANONYMOUS for memory of our
    // own). On failure an empty region, with errno as mmap left it, so the
    // caller can say why in its own words.
    static MappedRegion map(std::size_t length, int prot, int flags, int fd, off_t offset = 0);

    std::uint8_t* base() const { return base_; }
    std::size_t length() const { return length_; }
    bool valid() const { return base_ != nullptr; }
    // Unmaps now; empty after.
    void reset();

private:
    MappedRegion(std::uint8_t* base, std::size_t length) : base_(base), length_(length) {}

    std::uint8_t* base_ = nullptr;
    std::size_t length_ = 0;
};

}  // namespace slabcast
