// The one place slabs become VTK arrays: the zero-copy arrays (values and
// ages) that point into pinned slab buffers, the assembled ones, and their
// ranges, which VTK would otherwise compute again (the field data that tells
// the GUI and scripts which step is on screen: SlabcastFieldData.h). What
// needs no VTK (which slab supplies each plane, which buffer each slab shows,
// the assembly itself, the headers) is in shared/slab (slabcast/
// slab_selection.h, step_choice.h, extent_values.h, stitched_planes.h, live_slabs.h).
#ifndef SlabcastArrays_h
#define SlabcastArrays_h

#include "slabcast/extent_values.h"
#include "slabcast/slab_figures.h"
#include "slabcast/slab_file.h"
#include "slabcast/slab_selection.h"
#include "slabcast/step_choice.h"
#include "slabcast/stitched_planes.h"

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

// Whether a step shown from `bySlab` may stay pinned in place until the next
// frame at all: every slab has slabcast::kBuffersToHoldInPlace buffers
// (slabcast/in_place_hold.h, which also says for how long); else the piece
// is copied.
bool CanHoldAcrossFrames(const std::map<int, slabcast::SlabBuffer>& bySlab);

// The output's arrays for `extent` (of the volume at `stride`) of the step
// whose buffers are `bySlab`, without a copy where possible: the values, the
// ages (where `ages`), and ZeroCopy 1 when they point into one slab's mapping
// (Mapping), 2 when several slabs' planes are mapped back to back (only with
// `stitch`), 0 when assembled (a stride, the nearest fill's copies in
// `filled`, part planes, planes that are not whole pages, or no `stitch`);
// stitched ranges from `stitches` where it holds them (slabcast/stitched_planes.h).
struct StepArrays
{
  vtkFloatArray* Values = nullptr;
  vtkUnsignedCharArray* Ages = nullptr;
  int ZeroCopy = 0;
  const slabcast::SlabMapping* Mapping = nullptr;
};
StepArrays NewStepArrays(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims, const int extent[6],
  const slabcast::FilledSlabs& filled, int stride, bool ages, bool stitch = false,
  slabcast::StitchCache* stitches = nullptr);

// Arrays over planes z0..z1 of buffer `buffer`, whose slab stores them all:
// they point into the read-only mapping and keep the mapping and the buffer's
// pin alive until VTK frees them.
vtkFloatArray* NewZeroCopyValues(
  const slabcast::SlabBuffer& buffer, const slabcast::Dims& dims, int z0, int z1);
vtkUnsignedCharArray* NewZeroCopyAges(
  const slabcast::SlabBuffer& buffer, const slabcast::Dims& dims, int z0, int z1);

// Arrays over `extent`, whole planes from several slabs, without a copy: the
// slabs' planes mapped back to back (slabcast/stitched_planes.h), the source
// buffers' mappings and pins kept until VTK frees them. nullptr where the
// planes are not whole pages or the extent not whole planes: assemble then.
vtkFloatArray* NewStitchedValues(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims, const int extent[6],
  slabcast::StitchCache* cache = nullptr);
vtkUnsignedCharArray* NewStitchedAges(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims, const int extent[6],
  slabcast::StitchCache* cache = nullptr);

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
// them (the range skips NaN, the finite range infinities too).
struct ArrayRanges
{
  bool valuesKnown = false, finiteKnown = false;
  double values[2] = { 0, 0 }, finite[2] = { 0, 0 }, ages[2] = { 0, 0 };
};
// Read from the arrays, in one pass (slabcast/value_range.h).
ArrayRanges ComputeRanges(vtkFloatArray* values, vtkUnsignedCharArray* ages);
// Fills VTK's range cache of both arrays with `r`. Call after the arrays'
// last modification (SetName included): VTK trusts the cache while an
// array's modification time is older. ParaView asks for the ranges of every
// array on every new step, and VTK's own pass reads every value of both
// arrays to answer; the reader knows them once per published step (a
// published buffer never changes) instead.
void PrimeRanges(vtkFloatArray* values, vtkUnsignedCharArray* ages, const ArrayRanges& r);

// The ranges of the last whole step a reader showed, and what it was made of
// (each buffer's file, buffer and publication seq, and the extent).
struct RangeCache
{
  std::vector<std::uint64_t> Key;
  ArrayRanges Ranges;
  // Values the reader read to find them (0: all from the receiver's measure;
  // -1: left to VTK), for the field data's "RangeValuesRead".
  std::int64_t ValuesRead = -1;
};
// For a whole step (`choice.whole`): the ranges from `cache` when the output
// is made of the same publications (extent, stride), filled the same way
// (`refilled`: the reader's Fill made copies), else found and remembered;
// then primed. Found from the receiver's measure of each slab's planes where
// the output is the slabs' values as published (slabcast/step_ranges.h; at
// stride 1, not refilled), else read from the arrays. A step being written
// (Newest data) changes under the reader: VTK computes those ranges itself
// when asked.
void PrimeRanges(RangeCache& cache, const slabcast::StepChoice& choice, const slabcast::SlabSelection& selection,
  const slabcast::Dims& dims, const int extent[6], int stride, vtkFloatArray* values,
  vtkUnsignedCharArray* ages, bool refilled);

// Names the values `field` and their ages (nullptr: none) "<field>_age"
// (before PrimeRanges: a name is a modification).
void NameArrays(const std::string& field, vtkFloatArray* values, vtkUnsignedCharArray* ages);
// Hands both to `pd` (the values as its scalars) and drops the caller's references.
void AttachArrays(vtkPointData* pd, vtkFloatArray* values, vtkUnsignedCharArray* ages);

} // namespace slabcast_vtk

#endif
