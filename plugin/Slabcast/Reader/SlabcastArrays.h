// The one place slabs become VTK arrays: the zero-copy vtkFloatArray that
// points into a slab's mapping, the assembled one, and the field data that
// tells the GUI and scripts which step is on screen. What needs no VTK (which
// slab supplies each plane, the assembly itself, the headers) is in
// shared/slab (slabcast/slab_selection.h, extent_values.h, live_slabs.h).
#ifndef SlabcastArrays_h
#define SlabcastArrays_h

#include "slabcast/slab_file.h"
#include "slabcast/slab_pool.h"
#include "slabcast/slab_selection.h"

#include "vtkType.h"

#include <map>
#include <vector>

class vtkFieldData;
class vtkFloatArray;

namespace slabcast_vtk
{

// An array over planes z0..z1 of `mapping`, which stores them all: it points
// into the read-only mapping and keeps the mapping alive until VTK frees it.
vtkFloatArray* NewZeroCopyArray(
  const slabcast::SlabMappingPtr& mapping, const slabcast::Dims& dims, int z0, int z1);

// An array holding `extent` assembled from the selection's slabs, in memory of
// its own (slabcast::map_values) that VTK gives back with munmap.
vtkFloatArray* NewAssembledArray(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabMappingPtr>& bySlab, const slabcast::Dims& dims,
  const int extent[6]);

// Step and per-slab counters of the slabs behind an output (`used`, with
// `headers` read from them in the same order), so the GUI's Information panel
// and scripts can show which step is on screen and how much of it arrived.
void AddSlabFieldData(vtkFieldData* fd, const std::vector<slabcast::SlabMappingPtr>& used,
  const std::vector<slabcast::SlabHeader>& headers, vtkIdType step, int zeroCopy);

} // namespace slabcast_vtk

#endif
