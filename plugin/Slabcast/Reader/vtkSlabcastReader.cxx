// vtkSlabcastReader: RequestInformation, RequestData, Refresh and the live
// polling, which share one state (SlabcastReaderState.h) and read as one
// sequence; the History, the stream figures and the arrays live in files of
// their own.
#include "vtkSlabcastReader.h"

#include "SlabcastAgreement.h"
#include "SlabcastArrays.h"
#include "SlabcastFieldData.h"
#include "SlabcastReaderState.h"

#include "vtkDataObject.h"
#include "vtkExtentTranslator.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationIntegerRequestKey.h" // UPDATE_SPLIT_MODE's key type
#include "vtkInformationVector.h"
#include "vtkObjectFactory.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkUnsignedCharArray.h"

#include "slabcast/descriptor.h"
#include "slabcast/extent_values.h"
#include "slabcast/live_slabs.h"
#include "slabcast/slab_figures.h"
#include "slabcast/slab_pool.h"
#include "slabcast/slab_selection.h"
#include "slabcast/step_choice.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

vtkStandardNewMacro(vtkSlabcastReader);


//------------------------------------------------------------------------------
vtkSlabcastReader::vtkSlabcastReader()
  : Internals(new SlabcastReaderState)
{
  this->SetNumberOfInputPorts(0);
  this->SetNumberOfOutputPorts(1);
}

//------------------------------------------------------------------------------
vtkSlabcastReader::~vtkSlabcastReader()
{
  this->SetFileName(nullptr);
  // Arrays handed out keep their own references to the buffers they use.
  slabcast::StepNews::instance().forget(this->Internals->NewsKey);
  delete this->Internals;
}

//------------------------------------------------------------------------------
bool vtkSlabcastReader::FollowsLiveData() const
{
  // With several ranks showing whole steps, a rank that re-executed on its
  // own slabs' news could show another step than the others: only Refresh,
  // which every rank runs, moves them on. So too one process a script drives
  // with Refresh: re-executed by its render on news of its own, it pinned a
  // newer step while the view still held the two before it, three buffers a
  // slab for one view (the soak's pvbatch). The GUI's one process, which
  // never refreshes, follows the slabs by itself.
  return this->Completeness == NEWEST_DATA ||
    (slabcast_vtk::ProcessCount() <= 1 && !this->Internals->Refreshed);
}

//------------------------------------------------------------------------------
vtkMTimeType vtkSlabcastReader::GetMTime()
{
  vtkMTimeType t = this->Superclass::GetMTime();
  SlabcastReaderState& in = *this->Internals;
  if (!this->Pause && in.Attempted && this->FollowsLiveData())
  {
    const std::uint64_t now = in.Signature();
    if (now != in.SignatureSeenByMTime)
    {
      in.SignatureSeenByMTime = now;
      in.LiveTime.Modified();
      in.NewsSeenOnlyByMTime = true;
    }
    t = std::max<vtkMTimeType>(t, in.LiveTime.GetMTime());
  }
  return t;
}

//------------------------------------------------------------------------------
bool vtkSlabcastReader::GetNeedsUpdate()
{
  SlabcastReaderState& in = *this->Internals;
  if (!this->FollowsLiveData())
  {
    // Several ranks, whole steps: news since the last Refresh, which the
    // caller runs on every rank (never marked modified here: this runs on
    // the root rank only).
    return !this->Pause &&
      (!in.Refreshed ||
        slabcast::live_signature(in.DescriptorPath, in.Visible) != in.SignatureAtRefresh);
  }
  if (this->Pause || !in.Attempted)
  {
    return false;
  }
  const std::uint64_t now = in.Signature();
  if (now != in.SignatureAtExecute)
  {
    // ParaView's LiveSource behaviour marks the proxy modified but leaves the
    // algorithm's own modification time to the algorithm. Announced here, the
    // news is no news to GetMTime in the update this starts.
    in.SignatureSeenByMTime = now;
    in.NewsSeenOnlyByMTime = false;
    this->Modified();
    return true;
  }
  // The output already holds the news (a render re-executed the reader through
  // GetMTime) but the view may not: the caller's MarkModified makes the
  // representations take the output again, without re-executing the reader.
  const bool unannounced = in.NewsSeenOnlyByMTime;
  in.NewsSeenOnlyByMTime = false;
  return unannounced;
}

//------------------------------------------------------------------------------
void vtkSlabcastReader::Refresh()
{
  SlabcastReaderState& in = *this->Internals;
  std::map<int, slabcast::SlabMappingPtr> slabs;
  try
  {
    in.Descriptor = slabcast::read_descriptor(this->FileName ? this->FileName : "");
    in.DescriptorPath = this->FileName;
    in.HaveDescriptor = true;
    slabs = in.VisibleSlabs();
  }
  catch (const std::exception&)
  {
    // No descriptor (yet): this rank has no say; RequestInformation reports why.
  }
  in.Visible.clear();
  for (const auto& kv : slabs)
  {
    in.Visible.push_back(kv.second);
  }
  in.SignatureAtRefresh = slabcast::live_signature(in.DescriptorPath, in.Visible);
  in.Refreshed = true;
  if (auto agreed = slabcast_vtk::AgreeAndPin(slabs))
  {
    in.AgreedPins = std::move(agreed->Pins);
    in.HaveAgreement = true;
    this->AgreedStep = agreed->Step;
  }
  in.StreamTotals = slabcast::total_figures(slabcast_vtk::GatherFigures(this->StreamFigures()));
  this->Modified();
}

//------------------------------------------------------------------------------
int vtkSlabcastReader::RequestInformation(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  SlabcastReaderState& in = *this->Internals;
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
  const slabcast_vtk::StridedGeometry g = slabcast_vtk::Strided(d, this->Stride);
  this->VolumeDimensions[0] = static_cast<int>(d.dims.nx);
  this->VolumeDimensions[1] = static_cast<int>(d.dims.ny);
  this->VolumeDimensions[2] = static_cast<int>(d.dims.nz);
  outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), g.Whole, 6);
  outInfo->Set(vtkDataObject::ORIGIN(), d.origin, 3);
  outInfo->Set(vtkDataObject::SPACING(), g.Spacing, 3);
  vtkDataObject::SetPointDataActiveScalarInfo(outInfo, VTK_FLOAT, 1);
  // Pieces along z: with NZ = slabs x depth, piece k of one-per-slab is exactly
  // slab k's stored planes (owned + one ghost below), see slabcast/volume.h.
  outInfo->Set(CAN_PRODUCE_SUB_EXTENT(), 1);
  outInfo->Set(vtkExtentTranslator::UPDATE_SPLIT_MODE(), vtkExtentTranslator::Z_SLAB_MODE);
  this->TakeHistory(outInfo);
  return 1;
}

//------------------------------------------------------------------------------
int vtkSlabcastReader::RequestData(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  SlabcastReaderState& in = *this->Internals;
  this->Step = -1;
  in.Shown.clear();
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
  const slabcast_vtk::StridedGeometry g = slabcast_vtk::Strided(d, this->Stride);
  output->SetOrigin(d.origin);
  output->SetSpacing(g.Spacing);
  if (ext[0] > ext[1] || ext[2] > ext[3] || ext[4] > ext[5])
  {
    // More pieces than planes: this piece is empty, which is not an error.
    in.Used.clear();
    in.RecordExecution();
    return 1;
  }
  if (ext[0] < 0 || ext[1] > g.Whole[1] || ext[2] < 0 || ext[3] > g.Whole[3] || ext[4] < 0 ||
    ext[5] > g.Whole[5])
  {
    vtkErrorMacro(<< in.DescriptorPath << ": requested extent " << ext[0] << ".." << ext[1] << ", "
                  << ext[2] << ".." << ext[3] << ", " << ext[4] << ".." << ext[5]
                  << " lies outside the volume " << slabcast::to_string(d.dims) << " at stride "
                  << this->Stride);
    return 0;
  }

  vtkFloatArray* values = nullptr;
  vtkUnsignedCharArray* ages = nullptr;
  slabcast::StepChoice choice;
  std::vector<slabcast::SlabHeader> headers;
  bool agreed = false;
  bool refilled = false;
  slabcast::SlabSelection sel;
  in.Follow = this->Completeness == NEWEST_DATA ? slabcast::LiveFollow::Writes
                                                : slabcast::LiveFollow::Publications;
  try
  {
    sel = this->Stride > 1
      ? slabcast::select_strided_slabs(d, in.DescriptorPath, ext, this->Stride)
      : slabcast::select_slabs(d, in.DescriptorPath, ext);
    const slabcast::ExtentSources sources =
      slabcast::open_extent_sources(in.Pool, d, in.DescriptorPath, sel);
    in.Used = sources.used;
    // Before the values are touched: a step published while we look shows up
    // as news on the next poll instead of being lost.
    in.RecordExecution();

    const std::optional<double> time = outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP())
      ? std::optional<double>(outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP()))
      : std::nullopt;
    const SlabcastReaderState::ChosenStep chosen = in.Choose(this->AgreedStep, sources.by_slab, time);
    choice = chosen.Choice;
    agreed = chosen.FromAgreement;
    if (choice.buffers.size() != sources.by_slab.size())
    {
      // Nothing published yet (or, in whole steps, no step all slabs hold):
      // an empty piece now, the first step as soon as it is there; a slab
      // that holds no step at all is named, never an empty output in silence.
      this->ReportSlabsWithoutStep(sources.by_slab);
      output->Initialize();
      return 1;
    }
    in.NoStepSince.clear();
    in.NoStepWarned.clear();
    // The nearest fill over slabs that lost values: their copies, filled.
    const slabcast::FilledSlabs filled =
      this->Fill == FILL_NEAREST && this->Completeness == WHOLE_STEPS
      ? slabcast::fill_slabs_from_coarser(choice.buffers)
      : slabcast::FilledSlabs{};
    refilled = !filled.empty();
    const slabcast_vtk::StepArrays arrays =
      slabcast_vtk::NewStepArrays(sel, choice.buffers, d.dims, ext, filled, this->Stride, this->AgeArray,
        slabcast_vtk::CanHoldAcrossFrames(choice.buffers) && in.Hold.may_hold(choice.buffers), &in.Stitches);
    values = arrays.Values;
    ages = arrays.Ages;
    this->ZeroCopy = arrays.ZeroCopy;
    if (arrays.Mapping)
    {
      this->MappingBegin = static_cast<vtkIdType>(reinterpret_cast<std::uintptr_t>(arrays.Mapping->base()));
      this->MappingEnd = this->MappingBegin + static_cast<vtkIdType>(arrays.Mapping->mapped_bytes());
    }
    std::vector<slabcast::SlabMappingPtr> shown;
    for (const auto& kv : choice.buffers)
    {
      shown.push_back(kv.second.mapping);
    }
    headers = slabcast::read_slab_headers(shown);
  }
  catch (const std::exception& e)
  {
    vtkErrorMacro(<< e.what());
    if (values)
    {
      values->Delete();
    }
    if (ages)
    {
      ages->Delete();
    }
    this->ZeroCopy = 0;
    this->MappingBegin = this->MappingEnd = 0;
    in.Used.clear();
    in.RecordExecution();
    output->Initialize();
    return 0;
  }

  output->SetExtent(ext);
  this->ArrayAddress = static_cast<vtkIdType>(reinterpret_cast<std::uintptr_t>(values->GetVoidPointer(0)));
  slabcast_vtk::NameArrays(d.field, values, ages);
  slabcast_vtk::PrimeRanges(in.Ranges, choice, sel, d.dims, ext, this->Stride, values, ages, refilled);
  slabcast_vtk::AttachArrays(output->GetPointData(), values, ages);
  if (!this->ZeroCopy || slabcast_vtk::ProcessCount() == 1)
  {
    // A copy needs no pin, and one process uses its agreement for this
    // output only: held to the next agreement, its pins would keep one more
    // buffer of each slab beside the frame in place and the view's frame
    // before. A re-execution re-pins the step if it is still there.
    in.AgreedPins.clear();
  }

  this->Step = choice.step;
  if (in.History.depth() > 0)
  {
    output->GetInformation()->Set(vtkDataObject::DATA_TIME_STEP(), static_cast<double>(choice.step));
  }
  for (const auto& kv : choice.buffers)
  {
    slabcast::Publication shown;
    shown.step = choice.step;
    if (kv.second.pin)
    {
      shown = kv.second.pin->publication();
    }
    in.Shown[kv.first] = shown;
  }
  in.WatchForNewerSteps(choice, this->Pause);
  slabcast_vtk::AddSlabFieldData(output->GetFieldData(), choice, headers, this->ZeroCopy, agreed, in.Ranges.ValuesRead);
  slabcast_vtk::AddNewsKey(output->GetFieldData(), in.NewsKey);
  // One process sees every slab it reads; several gathered theirs in Refresh.
  const slabcast::SlabFigures totals = slabcast_vtk::ProcessCount() > 1
    ? in.StreamTotals
    : slabcast::total_figures(this->StreamFigures());
  slabcast_vtk::AddStreamFieldData(output->GetFieldData(), totals);
  return 1;
}

//------------------------------------------------------------------------------
void vtkSlabcastReader::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "FileName: " << (this->FileName ? this->FileName : "(none)") << "\n";
  os << indent << "Pause: " << this->Pause << "\n";
  os << indent << "Completeness: " << (this->Completeness == NEWEST_DATA ? "Newest data" : "Whole steps")
     << "\n";
  os << indent << "Step: " << this->Step << "\n";
  os << indent << "AgreedStep: " << this->AgreedStep << "\n";
  os << indent << "Fill: " << (this->Fill == FILL_NEAREST ? "Nearest" : "As published") << "\n";
  os << indent << "AgeArray: " << this->AgeArray << "\n";
  os << indent << "Stride: " << this->Stride << "\n";
  os << indent << "History: " << this->History << "\n";
  os << indent << "ZeroCopy: " << this->ZeroCopy << "\n";
}
