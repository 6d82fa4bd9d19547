#include "vtkSlabcastReader.h"

#include "SlabcastArrays.h"

#include "vtkDataObject.h"
#include "vtkExtentTranslator.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationIntegerRequestKey.h" // UPDATE_SPLIT_MODE's key type
#include "vtkInformationVector.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include "slabcast/descriptor.h"
#include "slabcast/extent_values.h"
#include "slabcast/live_slabs.h"
#include "slabcast/slab_pool.h"
#include "slabcast/slab_selection.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

class vtkSlabcastReader::vtkInternals
{
public:
  slabcast::Descriptor Descriptor;
  bool HaveDescriptor = false;
  std::string DescriptorPath;
  slabcast::SlabPool Pool;
  std::vector<slabcast::SlabMappingPtr> Used; // slabs behind the last output, ascending index

  // Live state: a digest of what the last execution saw (slabcast::live_signature),
  // compared against the shared memory now. Attempted: some execution (even a
  // failed one) happened.
  bool Attempted = false;
  std::uint64_t SignatureAtExecute = 0;
  std::uint64_t SignatureSeenByMTime = 0;
  vtkTimeStamp LiveTime;

  std::uint64_t Signature() const { return slabcast::live_signature(this->DescriptorPath, this->Used); }

  void RecordExecution()
  {
    this->Attempted = true;
    this->SignatureAtExecute = this->Signature();
    this->SignatureSeenByMTime = this->SignatureAtExecute;
  }
};

vtkStandardNewMacro(vtkSlabcastReader);

//------------------------------------------------------------------------------
vtkSlabcastReader::vtkSlabcastReader()
  : Internals(new vtkInternals)
{
  this->SetNumberOfInputPorts(0);
  this->SetNumberOfOutputPorts(1);
}

//------------------------------------------------------------------------------
vtkSlabcastReader::~vtkSlabcastReader()
{
  this->SetFileName(nullptr);
  // Arrays handed out keep their own references to the mappings they use.
  delete this->Internals;
}

//------------------------------------------------------------------------------
vtkMTimeType vtkSlabcastReader::GetMTime()
{
  vtkMTimeType t = this->Superclass::GetMTime();
  vtkInternals& in = *this->Internals;
  if (!this->Pause && in.Attempted)
  {
    // Every rank runs this on its own slabs, so each re-executes exactly when
    // the memory behind its own piece moved to a new step.
    const std::uint64_t now = in.Signature();
    if (now != in.SignatureSeenByMTime)
    {
      in.SignatureSeenByMTime = now;
      in.LiveTime.Modified();
    }
    t = std::max<vtkMTimeType>(t, in.LiveTime.GetMTime());
  }
  return t;
}

//------------------------------------------------------------------------------
bool vtkSlabcastReader::GetNeedsUpdate()
{
  vtkInternals& in = *this->Internals;
  if (this->Pause || !in.Attempted || in.Signature() == in.SignatureAtExecute)
  {
    return false;
  }
  // ParaView's LiveSource behaviour marks the proxy modified but leaves the
  // algorithm's own modification time to the algorithm.
  this->Modified();
  return true;
}

//------------------------------------------------------------------------------
int vtkSlabcastReader::RequestInformation(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  vtkInternals& in = *this->Internals;
  in.HaveDescriptor = false;
  in.DescriptorPath = this->FileName ? this->FileName : "";
  if (in.DescriptorPath.empty())
  {
    vtkErrorMacro(<< "no FileName set: give the path of a .slabcast descriptor");
    return 0;
  }
  try
  {
    in.Descriptor = slabcast::read_descriptor(in.DescriptorPath);
  }
  catch (const std::exception& e)
  {
    vtkErrorMacro(<< e.what());
    in.Used.clear();
    in.RecordExecution(); // so that a descriptor appearing later counts as news
    return 0;
  }
  in.HaveDescriptor = true;
  const slabcast::Descriptor& d = in.Descriptor;

  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  const int whole[6] = { 0, static_cast<int>(d.dims.nx - 1), 0, static_cast<int>(d.dims.ny - 1), 0,
    static_cast<int>(d.dims.nz - 1) };
  outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole, 6);
  outInfo->Set(vtkDataObject::ORIGIN(), d.origin, 3);
  outInfo->Set(vtkDataObject::SPACING(), d.spacing, 3);
  vtkDataObject::SetPointDataActiveScalarInfo(outInfo, VTK_FLOAT, 1);
  // Pieces along z: with NZ = slabs x depth, piece k of one-per-slab is exactly
  // slab k's stored planes (owned + one ghost below), see slabcast/volume.h.
  outInfo->Set(CAN_PRODUCE_SUB_EXTENT(), 1);
  outInfo->Set(vtkExtentTranslator::UPDATE_SPLIT_MODE(), vtkExtentTranslator::Z_SLAB_MODE);
  return 1;
}

//------------------------------------------------------------------------------
int vtkSlabcastReader::RequestData(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  vtkInternals& in = *this->Internals;
  this->Step = -1;
  this->ZeroCopy = 0;
  this->ArrayAddress = this->MappingBegin = this->MappingEnd = 0;

  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  vtkImageData* output = vtkImageData::GetData(outInfo);
  output->Initialize();
  if (!in.HaveDescriptor)
  {
    return 0; // RequestInformation has reported why
  }
  const slabcast::Descriptor& d = in.Descriptor;
  int ext[6];
  outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT(), ext);
  output->SetOrigin(d.origin);
  output->SetSpacing(d.spacing);
  if (ext[0] > ext[1] || ext[2] > ext[3] || ext[4] > ext[5])
  {
    // More pieces than planes: this piece is empty, which is not an error.
    in.Used.clear();
    in.RecordExecution();
    return 1;
  }
  if (ext[0] < 0 || ext[1] >= d.dims.nx || ext[2] < 0 || ext[3] >= d.dims.ny || ext[4] < 0 ||
    ext[5] >= d.dims.nz)
  {
    vtkErrorMacro(<< in.DescriptorPath << ": requested extent " << ext[0] << ".." << ext[1] << ", "
                  << ext[2] << ".." << ext[3] << ", " << ext[4] << ".." << ext[5]
                  << " lies outside the volume " << slabcast::to_string(d.dims));
    return 0;
  }

  vtkFloatArray* array = nullptr;
  std::vector<slabcast::SlabHeader> headers;
  try
  {
    const slabcast::SlabSelection sel = slabcast::select_slabs(d, in.DescriptorPath, ext);
    const slabcast::ExtentSources sources =
      slabcast::open_extent_sources(in.Pool, d, in.DescriptorPath, sel);
    in.Used = sources.used;
    // Before the values are touched: a step that starts while we copy shows up
    // as news on the next poll instead of being lost.
    in.RecordExecution();

    if (sel.zero_copy_slab >= 0)
    {
      const slabcast::SlabMappingPtr& m = in.Used.front();
      array = slabcast_vtk::NewZeroCopyArray(m, d.dims, ext[4], ext[5]);
      this->ZeroCopy = 1;
      this->MappingBegin = static_cast<vtkIdType>(reinterpret_cast<std::uintptr_t>(m->base()));
      this->MappingEnd = this->MappingBegin + static_cast<vtkIdType>(m->mapped_bytes());
    }
    else
    {
      array = slabcast_vtk::NewAssembledArray(sel, sources.by_slab, d.dims, ext);
    }
    headers = slabcast::read_slab_headers(in.Used);
  }
  catch (const std::exception& e)
  {
    vtkErrorMacro(<< e.what());
    if (array)
    {
      array->Delete();
    }
    this->ZeroCopy = 0;
    this->MappingBegin = this->MappingEnd = 0;
    in.Used.clear();
    in.RecordExecution();
    output->Initialize();
    return 0;
  }

  output->SetExtent(ext);
  array->SetName(d.field.c_str());
  output->GetPointData()->SetScalars(array);
  this->ArrayAddress = static_cast<vtkIdType>(reinterpret_cast<std::uintptr_t>(array->GetVoidPointer(0)));
  array->Delete();

  this->Step = slabcast::lowest_step(headers);
  slabcast_vtk::AddSlabFieldData(output->GetFieldData(), in.Used, headers, this->Step, this->ZeroCopy);
  return 1;
}

//------------------------------------------------------------------------------
void vtkSlabcastReader::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "FileName: " << (this->FileName ? this->FileName : "(none)") << "\n";
  os << indent << "Pause: " << this->Pause << "\n";
  os << indent << "Step: " << this->Step << "\n";
  os << indent << "ZeroCopy: " << this->ZeroCopy << "\n";
}
