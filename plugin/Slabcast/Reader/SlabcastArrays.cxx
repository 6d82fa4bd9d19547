#include "SlabcastArrays.h"

#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkInformation.h"
#include "vtkInformationDoubleVectorKey.h"
#include "vtkInformationInformationVectorKey.h"
#include "vtkInformationVector.h"
#include "vtkIntArray.h"
#include "vtkNew.h"
#include "vtkPointData.h"
#include "vtkTypeInt64Array.h"
#include "vtkUnsignedCharArray.h"

#include "slabcast/clock.h"
#include "slabcast/in_place_hold.h"
#include "slabcast/publication.h"
#include "slabcast/slab_pool.h"
#include "slabcast/step_ranges.h"
#include "slabcast/stitched_planes.h"

#include <memory>
#include <optional>

namespace slabcast_vtk
{
namespace
{

// Hands `first` (memory of `buffer`) to `a` without a copy; the buffer (its
// mapping and pin) lives until VTK frees the array.
template <class ArrayT, class T>
void Lend(ArrayT* a, const slabcast::SlabBuffer& buffer, const T* first, vtkIdType n)
{
  slabcast::retain_for(std::make_shared<const slabcast::SlabBuffer>(buffer), first);
  // VTK's arrays are not const-aware; the memory is mapped read-only.
  a->SetArray(const_cast<T*>(first), n, 0, ArrayT::VTK_DATA_ARRAY_USER_DEFINED);
  a->SetArrayFreeFunction(&slabcast::release_mapping_of);
}

template <class ArrayT, class T>
ArrayT* Own(T* values, vtkIdType count)
{
  ArrayT* a = ArrayT::New();
  a->SetArray(values, count, 0, ArrayT::VTK_DATA_ARRAY_USER_DEFINED);
  a->SetArrayFreeFunction(&slabcast::unmap_values);
  return a;
}

} // namespace

vtkFloatArray* NewZeroCopyValues(
  const slabcast::SlabBuffer& buffer, const slabcast::Dims& dims, int z0, int z1)
{
  vtkFloatArray* a = vtkFloatArray::New();
  Lend(a, buffer, slabcast::zero_copy_values(buffer, dims, z0),
    static_cast<vtkIdType>(dims.plane()) * (z1 - z0 + 1));
  return a;
}

vtkUnsignedCharArray* NewZeroCopyAges(
  const slabcast::SlabBuffer& buffer, const slabcast::Dims& dims, int z0, int z1)
{
  vtkUnsignedCharArray* a = vtkUnsignedCharArray::New();
  Lend(a, buffer, slabcast::zero_copy_ages(buffer, dims, z0),
    static_cast<vtkIdType>(dims.plane()) * (z1 - z0 + 1));
  return a;
}

namespace
{
template <class ArrayT, class T>
ArrayT* Stitched(slabcast::StitchedPlanes::Kind kind, const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims, const int extent[6],
  slabcast::StitchCache* cache)
{
  std::shared_ptr<const slabcast::StitchedPlanes> planes =
    slabcast::StitchedPlanes::map(kind, selection, bySlab, dims, extent, cache);
  if (!planes)
  {
    return nullptr;
  }
  const T* first = static_cast<const T*>(planes->data());
  slabcast::retain_for(planes, first);
  ArrayT* a = ArrayT::New();
  // VTK's arrays are not const-aware; the memory is mapped read-only.
  a->SetArray(const_cast<T*>(first), slabcast::extent_value_count(extent), 0, ArrayT::VTK_DATA_ARRAY_USER_DEFINED);
  a->SetArrayFreeFunction(&slabcast::release_mapping_of);
  return a;
}
} // namespace

vtkFloatArray* NewStitchedValues(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims, const int extent[6],
  slabcast::StitchCache* cache)
{
  return Stitched<vtkFloatArray, float>(
    slabcast::StitchedPlanes::Kind::Values, selection, bySlab, dims, extent, cache);
}

vtkUnsignedCharArray* NewStitchedAges(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims, const int extent[6],
  slabcast::StitchCache* cache)
{
  return Stitched<vtkUnsignedCharArray, std::uint8_t>(
    slabcast::StitchedPlanes::Kind::Ages, selection, bySlab, dims, extent, cache);
}

vtkFloatArray* NewAssembledValues(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims,
  const int extent[6], const slabcast::FilledSlabs& filled, int stride)
{
  const vtkIdType count = slabcast::extent_value_count(extent);
  int fine[6];
  slabcast::stride_extent(extent, stride, fine);
  vtkFloatArray* a = Own<vtkFloatArray>(slabcast::map_values(count), count);
  try
  {
    slabcast::assemble_extent(selection, bySlab, dims, fine, a->GetPointer(0), filled, stride);
  }
  catch (...)
  {
    a->Delete();
    throw;
  }
  return a;
}

vtkUnsignedCharArray* NewAssembledAges(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims,
  const int extent[6], const slabcast::FilledSlabs& filled, int stride)
{
  const vtkIdType count = slabcast::extent_value_count(extent);
  int fine[6];
  slabcast::stride_extent(extent, stride, fine);
  vtkUnsignedCharArray* a = Own<vtkUnsignedCharArray>(slabcast::map_ages(count), count);
  try
  {
    slabcast::assemble_ages(selection, bySlab, dims, fine, a->GetPointer(0), filled, stride);
  }
  catch (...)
  {
    a->Delete();
    throw;
  }
  return a;
}

bool CanHoldAcrossFrames(const std::map<int, slabcast::SlabBuffer>& bySlab)
{
  for (const auto& kv : bySlab)
  {
    if (!kv.second.mapping || kv.second.mapping->buffers() < slabcast::kBuffersToHoldInPlace)
    {
      return false;
    }
  }
  return true;
}

StepArrays NewStepArrays(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabBuffer>& bySlab, const slabcast::Dims& dims, const int extent[6],
  const slabcast::FilledSlabs& filled, int stride, bool ages, bool stitch, slabcast::StitchCache* stitches)
{
  StepArrays a;
  try
  {
    const bool asStored = filled.empty() && stride == 1;
    if (asStored && selection.zero_copy_slab >= 0)
    {
      const slabcast::SlabBuffer& b = bySlab.at(selection.zero_copy_slab);
      a.Values = NewZeroCopyValues(b, dims, extent[4], extent[5]);
      a.Ages = ages ? NewZeroCopyAges(b, dims, extent[4], extent[5]) : nullptr;
      a.ZeroCopy = 1;
      a.Mapping = b.mapping.get();
    }
    // Several slabs' planes mapped back to back (stitched), their pins held
    // until the next frame where the caller says they may be (`stitch`).
    else if (asStored && stitch &&
      (a.Values = NewStitchedValues(selection, bySlab, dims, extent, stitches)) != nullptr)
    {
      // The ages too where their planes are whole pages, else copied.
      a.Ages = ages ? NewStitchedAges(selection, bySlab, dims, extent, stitches) : nullptr;
      if (ages && !a.Ages)
      {
        a.Ages = NewAssembledAges(selection, bySlab, dims, extent);
      }
      a.ZeroCopy = 2;
    }
    else
    {
      a.Values = NewAssembledValues(selection, bySlab, dims, extent, filled, stride);
      a.Ages = ages ? NewAssembledAges(selection, bySlab, dims, extent, filled, stride) : nullptr;
    }
  }
  catch (...)
  {
    for (vtkDataArray* made : { static_cast<vtkDataArray*>(a.Values), static_cast<vtkDataArray*>(a.Ages) })
    {
      if (made)
      {
        made->Delete();
      }
    }
    throw;
  }
  return a;
}

namespace
{

// Stores [lo, hi] as component 0's range under `perComponent` (PER_COMPONENT
// or PER_FINITE_COMPONENT), as vtkDataArray::ComputeRange caches it.
void CacheRange(vtkDataArray* a, vtkInformationInformationVectorKey* perComponent, double lo, double hi)
{
  vtkNew<vtkInformationVector> components;
  components->SetNumberOfInformationObjects(1);
  const double range[2] = { lo, hi };
  components->GetInformationObject(0)->Set(vtkDataArray::COMPONENT_RANGE(), range, 2);
  a->GetInformation()->Set(perComponent, components);
}

} // namespace

namespace
{
ArrayRanges ToArrayRanges(const slabcast::ValueRanges& v, const slabcast::AgeRange& a)
{
  ArrayRanges r;
  r.valuesKnown = !v.values.empty();
  r.finiteKnown = !v.finite.empty();
  r.values[0] = v.values.lo, r.values[1] = v.values.hi;
  r.finite[0] = v.finite.lo, r.finite[1] = v.finite.hi;
  r.ages[0] = a.lo, r.ages[1] = a.hi;
  return r;
}
} // namespace

ArrayRanges ComputeRanges(vtkFloatArray* values, vtkUnsignedCharArray* ages)
{
  const slabcast::ValueRanges v =
    slabcast::value_ranges(values->GetPointer(0), static_cast<std::size_t>(values->GetNumberOfValues()));
  const slabcast::AgeRange a = ages
    ? slabcast::age_range(ages->GetPointer(0), static_cast<std::size_t>(ages->GetNumberOfValues()))
    : slabcast::AgeRange{ 0, 0 };
  return ToArrayRanges(v, a);
}

void PrimeRanges(vtkFloatArray* values, vtkUnsignedCharArray* ages, const ArrayRanges& r)
{
  if (r.valuesKnown)
  {
    CacheRange(values, vtkAbstractArray::PER_COMPONENT(), r.values[0], r.values[1]);
  }
  if (r.finiteKnown)
  {
    CacheRange(values, vtkAbstractArray::PER_FINITE_COMPONENT(), r.finite[0], r.finite[1]);
  }
  if (ages && ages->GetNumberOfValues() > 0)
  {
    CacheRange(ages, vtkAbstractArray::PER_COMPONENT(), r.ages[0], r.ages[1]);
    CacheRange(ages, vtkAbstractArray::PER_FINITE_COMPONENT(), r.ages[0], r.ages[1]);
  }
}

StridedGeometry Strided(const slabcast::Descriptor& d, int stride)
{
  const std::int64_t n[3] = { d.dims.nx, d.dims.ny, d.dims.nz };
  StridedGeometry g{};
  for (int a = 0; a < 3; ++a)
  {
    g.Whole[2 * a + 1] = slabcast::strided_points(n[a], stride) - 1;
    g.Spacing[a] = d.spacing[a] * stride;
  }
  return g;
}

void NameArrays(const std::string& field, vtkFloatArray* values, vtkUnsignedCharArray* ages)
{
  values->SetName(field.c_str());
  if (ages)
  {
    // "<field>_age": sorted right after the values' own name, so that
    // ParaView, which colours a new volume by the first array in name order,
    // colours the values and not their age.
    ages->SetName((field + "_age").c_str());
  }
}

void AttachArrays(vtkPointData* pd, vtkFloatArray* values, vtkUnsignedCharArray* ages)
{
  pd->SetScalars(values);
  values->Delete();
  if (ages)
  {
    pd->AddArray(ages);
    ages->Delete();
  }
}

void PrimeRanges(RangeCache& cache, const slabcast::StepChoice& choice, const slabcast::SlabSelection& selection,
  const slabcast::Dims& dims, const int extent[6], int stride, vtkFloatArray* values,
  vtkUnsignedCharArray* ages, bool refilled)
{
  if (!choice.whole)
  {
    cache.ValuesRead = -1;
    return;
  }
  std::vector<std::uint64_t> key(extent, extent + 6);
  key.push_back(refilled ? 1 : 0);
  key.push_back(ages ? 1 : 0);
  key.push_back(static_cast<std::uint64_t>(stride));
  for (const auto& kv : choice.buffers)
  {
    key.push_back(kv.second.mapping->inode());
    key.push_back(static_cast<std::uint64_t>(kv.second.buffer));
    key.push_back(kv.second.pin ? kv.second.pin->publication().seq : 0);
  }
  if (key != cache.Key)
  {
    const std::optional<slabcast::StepRanges> published = stride == 1 && !refilled
      ? slabcast::published_ranges(selection, choice.buffers, dims, extent, ages != nullptr)
      : std::nullopt;
    cache.Ranges = published ? ToArrayRanges(published->values, published->ages) : ComputeRanges(values, ages);
    cache.ValuesRead = published ? published->values_read : values->GetNumberOfValues();
    cache.Key = key;
  }
  PrimeRanges(values, ages, cache.Ranges);
}

} // namespace slabcast_vtk
