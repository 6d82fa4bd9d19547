#include "SlabcastArrays.h"

#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkIntArray.h"
#include "vtkNew.h"
#include "vtkTypeInt64Array.h"

#include "slabcast/extent_values.h"

namespace slabcast_vtk
{

vtkFloatArray* NewZeroCopyArray(
  const slabcast::SlabMappingPtr& mapping, const slabcast::Dims& dims, int z0, int z1)
{
  const float* first = slabcast::zero_copy_values(*mapping, dims, z0);
  const vtkIdType n = static_cast<vtkIdType>(dims.plane()) * (z1 - z0 + 1);
  vtkFloatArray* a = vtkFloatArray::New();
  slabcast::retain_mapping_for(mapping, first);
  // VTK's arrays are not const-aware; the memory is mapped read-only.
  a->SetArray(const_cast<float*>(first), n, 0, vtkAbstractArray::VTK_DATA_ARRAY_USER_DEFINED);
  a->SetArrayFreeFunction(&slabcast::release_mapping_of);
  return a;
}

vtkFloatArray* NewAssembledArray(const slabcast::SlabSelection& selection,
  const std::map<int, slabcast::SlabMappingPtr>& bySlab, const slabcast::Dims& dims,
  const int extent[6])
{
  const vtkIdType count = slabcast::extent_value_count(extent);
  float* values = slabcast::map_values(count);
  vtkFloatArray* a = vtkFloatArray::New();
  a->SetArray(values, count, 0, vtkAbstractArray::VTK_DATA_ARRAY_USER_DEFINED);
  a->SetArrayFreeFunction(&slabcast::unmap_values);
  try
  {
    slabcast::assemble_extent(selection, bySlab, dims, extent, values);
  }
  catch (...)
  {
    a->Delete();
    throw;
  }
  return a;
}

namespace
{

template <class ArrayT, class Fn>
void AddPerSlab(
  vtkFieldData* fd, const char* name, const std::vector<slabcast::SlabHeader>& headers, Fn value)
{
  vtkNew<ArrayT> a;
  a->SetName(name);
  for (const auto& h : headers)
  {
    a->InsertNextValue(value(h.live));
  }
  fd->AddArray(a);
}

} // namespace

void AddSlabFieldData(vtkFieldData* fd, const std::vector<slabcast::SlabMappingPtr>& used,
  const std::vector<slabcast::SlabHeader>& headers, vtkIdType step, int zeroCopy)
{
  vtkNew<vtkTypeInt64Array> s;
  s->SetName("Step");
  s->InsertNextValue(step);
  fd->AddArray(s);
  vtkNew<vtkIntArray> z;
  z->SetName("ZeroCopy");
  z->InsertNextValue(zeroCopy);
  fd->AddArray(z);
  vtkNew<vtkIntArray> idx;
  idx->SetName("SlabIndex");
  for (const auto& m : used)
  {
    idx->InsertNextValue(m->geometry().index);
  }
  fd->AddArray(idx);
  using L = slabcast::SlabLive;
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabStep", headers, [](const L& l) { return l.step.load(); });
  AddPerSlab<vtkTypeInt64Array>(
    fd, "SlabLastStep", headers, [](const L& l) { return l.last_step.load(); });
  AddPerSlab<vtkDoubleArray>(fd, "SlabLossPercent", headers,
    [](const L& l) { return l.last_step_loss_ppm.load() / 1e4; });
  AddPerSlab<vtkDoubleArray>(fd, "SlabProgress", headers, [](const L& l) {
    const double expected = static_cast<double>(l.step_expected.load());
    return expected > 0 ? static_cast<double>(l.step_records.load()) / expected : 0.0;
  });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabPackets", headers,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.packets.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabRejected", headers,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.rejected.load()); });
  AddPerSlab<vtkTypeInt64Array>(
    fd, "SlabStale", headers, [](const L& l) { return static_cast<vtkTypeInt64>(l.stale.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabDuplicates", headers,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.duplicates.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabGeneration", headers,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.generation.load()); });
}

} // namespace slabcast_vtk
