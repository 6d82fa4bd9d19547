// Open slab mappings, kept between updates so a refresh costs no mmap and no
// page faults, and the keep-alive that lets a vtkFloatArray point straight into
// a mapping: the mapping stays mapped until the last array using it is freed.
#pragma once

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"

#include <map>
#include <memory>
#include <string>

namespace slabcast_reader
{

using MappingPtr = std::shared_ptr<const slabcast::SlabMapping>;

class SlabPool
{
public:
  // The mapping of slab `entry` of descriptor `d` (read from `descriptor_path`),
  // opened beneath the descriptor's directory, and reopened when the name leads
  // to another file (a receiver replaced it) or the file no longer covers the
  // mapping (cut short). Throws std::runtime_error naming the slab file and the
  // problem, also when the slab's shape disagrees with the descriptor.
  MappingPtr Get(const slabcast::Descriptor& d, const std::string& descriptor_path,
    const slabcast::SlabEntry& entry);
  void Clear() { this->Cache.clear(); }

private:
  struct Cached
  {
    std::string File;
    MappingPtr Mapping;
  };
  std::map<int, Cached> Cache;
};

// Registers `mapping` as the owner of array memory starting at `values`; the
// free function below drops that reference when VTK releases the array.
void RetainForArray(const MappingPtr& mapping, const void* values);
// Matches vtkAbstractArray::SetArrayFreeFunction's callback type.
void ReleaseFromArray(void* values);
// Number of arrays currently keeping a mapping alive (for tests and leaks).
std::size_t ArraysHoldingMappings();

} // namespace slabcast_reader
