// Which slab supplies each plane of a requested extent. Pure index math, no VTK,
// no mapping: the reader decides here between handing out a slab's memory as is
// (zero copy) and assembling the extent plane by plane.
#pragma once

#include "slabcast/descriptor.h"

#include <string>
#include <vector>

namespace slabcast_reader
{

struct PlaneSource
{
  int Slab = 0;       // slab whose stored planes hold this plane
  bool Ghost = false; // true: taken from that slab's ghost copy (owner not on this host)
};

struct SlabSelection
{
  // >= 0: the whole extent is one contiguous run of a single slab's stored
  // values (full rows and columns, planes inside its stored range), so the
  // output array can point into that slab's mapping. -1 otherwise.
  int ZeroCopySlab = -1;
  std::vector<PlaneSource> Planes; // one per plane z0..z1 of the extent
};

// `extent` is a non-empty VTK point extent inside the volume. Throws
// std::runtime_error naming the descriptor, the missing slab and its expected
// file when a plane is stored by no slab this host holds.
SlabSelection SelectSlabs(
  const slabcast::Descriptor& d, const std::string& descriptor_path, const int extent[6]);

} // namespace slabcast_reader
