// Open slab mappings, kept between a reader's updates so a refresh costs no
// mmap and no page faults, and the keep-alive that lets an array handed to
// someone else (VTK) point straight into a mapping: the mapping stays mapped
// until the last array using it is freed.
#pragma once

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"

#include <cstddef>
#include <map>
#include <memory>
#include <string>

namespace slabcast {

using SlabMappingPtr = std::shared_ptr<const SlabMapping>;

class SlabPool {
public:
    // The mapping of slab `entry` of descriptor `d` (read from `descriptor_path`),
    // opened beneath the descriptor's directory, and reopened when the name leads
    // to another file (a receiver replaced it) or the file no longer covers the
    // mapping (cut short). Throws std::runtime_error naming the slab file and the
    // problem, also when the slab's shape disagrees with the descriptor.
    SlabMappingPtr get(const Descriptor& d, const std::string& descriptor_path, const SlabEntry& entry);
    void clear() { cache_.clear(); }

private:
    struct Cached {
        std::string file;
        SlabMappingPtr mapping;
    };
    std::map<int, Cached> cache_;
};

// Registers `mapping` as the owner of array memory starting at `values`;
// release_mapping_of drops that reference when the array is freed.
void retain_mapping_for(const SlabMappingPtr& mapping, const void* values);
// The same for any owner of the memory: a pinned buffer (the mapping and the
// pin that keeps the receiver off it) goes with the last array using it.
void retain_for(std::shared_ptr<const void> owner, const void* values);
// Has the type of vtkAbstractArray::SetArrayFreeFunction's callback.
void release_mapping_of(void* values);
// Number of arrays currently keeping a mapping alive (for tests and leaks).
std::size_t mappings_held_by_arrays();

}  // namespace slabcast
