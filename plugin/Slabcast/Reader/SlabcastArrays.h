// The one place slabs become VTK arrays: the zero-copy arrays (values and
// ages) that point into a pinned slab buffer, the assembled ones, and the
// field data that tells the GUI and scripts which step is on screen and how
// whole it is. What needs no VTK (which slab supplies each plane, which buffer
// each slab shows, the assembly itself, the headers) is in shared/slab
// (slabcast/slab_selection.h, step_choice.h, extent_values.h, live_slabs.h).
#ifndef SlabcastArrays_h
#define SlabcastArrays_h

#include "slabcast/extent_values.h"
#include "slabcast/slab_figures.h"
#include "slabcast/slab_file.h"
#include "slabcast/slab_selection.h"
#include "slabcast/step_choice.h"

#include "vtkType.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

class vtkFieldData;
class vtkPointData;
class vtkFloatArray;
class vtkUnsignedCharArray;

namespace slabcast_vtk
{

// Arrays over planes z0..z1 of buffer `buffer`, whose slab stores them all:
// they point into the read-only mapping and keep the mapping and the buffer's
// pin alive until VTK frees them.
vtkFloatArray* NewZeroCopyValues(
  const slabcast::SlabBuffer& buffer, const slabcast::Dims& dims, int z0, int z1);
vtkUnsignedCharArray* NewZeroCopyAges(
  const slabcast::SlabBuffer& buffer, const slabcast::Dims& dims, int z0, int z1);

// Arrays holding `extent` assembled from each plane's slab buffer (or its
// copy in `filled`), in memory of their own (slabcast::map_values) that VTK
// gives back with munmap. With a `stride` > 1 `extent` is one of the strided
// volume, and `selection` is of its stride_extent (slabcast/extent_values.h).
vtkFloatArray* NewAssembledValues(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims,
  const int extent[6], const slabcast::FilledSlabs& filled = {}, int stride = 1);
vtkUnsignedCharArray* NewAssembledAges(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims,
  const int extent[6], const slabcast::FilledSlabs& filled = {}, int stride = 1);

// The output's whole extent and spacing at a reader's Stride (every
// stride-th point along each axis, see slabcast/extent_values.h).
struct StridedGeometry
{
  int Whole[6];
  double Spacing[3];
};
StridedGeometry Strided(const slabcast::Descriptor& d, int stride);

// The ranges of an output's values and ages (none: nullptr), as VTK computes
// them (the range skips NaN, the finite range infinities too), in one pass.
struct ArrayRanges
{
  bool valuesKnown = false, finiteKnown = false;
  double values[2] = { 0, 0 }, finite[2] = { 0, 0 }, ages[2] = { 0, 0 };
};
ArrayRanges ComputeRanges(vtkFloatArray* values, vtkUnsignedCharArray* ages);
// Fills VTK's range cache of both arrays with `r`. Call after the arrays'
// last modification (SetName included): VTK trusts the cache while an
// array's modification time is older. ParaView asks for the ranges of every
// array on every new step, and VTK's own pass took 0.5 s for each of a 256^3
// volume's two arrays on this project's machine; the reader computes them
// once per published step (a published buffer never changes) instead.
void PrimeRanges(vtkFloatArray* values, vtkUnsignedCharArray* ages, const ArrayRanges& r);

// The ranges of the last whole step a reader showed, and what it was made of
// (each buffer's file, buffer and publication seq, and the extent).
struct RangeCache
{
  std::vector<std::uint64_t> Key;
  ArrayRanges Ranges;
};
// For a whole step (`choice.whole`): the ranges from `cache` when the output
// is made of the same publications (extent, stride), filled the same way (`refilled`: the
// reader's Fill made copies), else computed and remembered; then primed. A
// step being written (Newest data) changes under the reader: VTK
// computes those ranges itself when asked.
void PrimeRanges(RangeCache& cache, const slabcast::StepChoice& choice, const int extent[6],
  int stride, vtkFloatArray* values, vtkUnsignedCharArray* ages, bool refilled);

// Names the values `field` and their ages (nullptr: none) "<field>_age"
// (before PrimeRanges: a name is a modification).
void NameArrays(const std::string& field, vtkFloatArray* values, vtkUnsignedCharArray* ages);
// Hands both to `pd` (the values as its scalars) and drops the caller's references.
void AttachArrays(vtkPointData* pd, vtkFloatArray* values, vtkUnsignedCharArray* ages);

// The step shown, its age, and per slab (in `choice`'s order) how whole it is
// and the receiver's counters from `headers` (read from the same slabs), so
// the GUI's Information panel and scripts can show what is on screen.
void AddSlabFieldData(vtkFieldData* fd, const slabcast::StepChoice& choice,
  const std::vector<slabcast::SlabHeader>& headers, int zeroCopy, int agreed);

// The whole stream's figures (every slab of every rank): "StreamGbps", the
// receivers' rate over their last status second, and "StreamLossPercent",
// the last finished step's loss, for a frame's caption.
void AddStreamFieldData(vtkFieldData* fd, const slabcast::SlabFigures& totals);

} // namespace slabcast_vtk

#endif
