#include "vtkSlabcastDatasetReader.h"

#include "SlabcastArrays.h"
#include "SlabcastDatasetTimes.h"
#include "SlabcastFieldData.h"

#include "vtkDataObject.h"
#include "vtkExtentTranslator.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationIntegerRequestKey.h" // UPDATE_SPLIT_MODE's key type
#include "vtkInformationVector.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkSmartPointer.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkUnsignedCharArray.h"

#include "slabcast/dataset.h"
#include "slabcast/step_file.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <string>
#include <vector>

vtkStandardNewMacro(vtkSlabcastDatasetReader);

namespace
{

// `extent` of a step file (values or ages, one ArrayT value each): its z
// planes are read straight into the array where the extent spans whole x/y
// planes (ParaView's z-slab pieces always do), else into a copy that is then
// cropped to the extent (a filter asking for less of each plane).
template <class ArrayT>
vtkSmartPointer<ArrayT> ReadExtent(
  const std::string& path, slabcast::StepCodec codec, const slabcast::Dims& dims, const int extent[6])
{
  using T = typename ArrayT::ValueType;
  const std::int64_t nx = extent[1] - extent[0] + 1;
  const std::int64_t ny = extent[3] - extent[2] + 1;
  const std::int64_t nz = extent[5] - extent[4] + 1;
  auto a = vtkSmartPointer<ArrayT>::New();
  a->SetNumberOfValues(static_cast<vtkIdType>(nx * ny * nz));
  if (nx == dims.nx && ny == dims.ny)
  {
    slabcast::read_step_planes(path, codec, dims, sizeof(T), extent[4], extent[5] + 1, a->GetPointer(0));
    return a;
  }
  std::vector<T> planes(static_cast<std::size_t>(dims.plane() * nz));
  slabcast::read_step_planes(path, codec, dims, sizeof(T), extent[4], extent[5] + 1, planes.data());
  T* out = a->GetPointer(0);
  for (std::int64_t z = 0; z < nz; ++z)
  {
    for (std::int64_t y = extent[2]; y <= extent[3]; ++y, out += nx)
    {
      std::copy_n(planes.data() + (z * dims.ny + y) * dims.nx + extent[0], nx, out);
    }
  }
  return a;
}

} // namespace

//------------------------------------------------------------------------------
vtkSlabcastDatasetReader::vtkSlabcastDatasetReader()
{
  this->SetNumberOfInputPorts(0);
  this->SetNumberOfOutputPorts(1);
}

//------------------------------------------------------------------------------
vtkSlabcastDatasetReader::~vtkSlabcastDatasetReader()
{
  this->SetFileName(nullptr);
}

//------------------------------------------------------------------------------
int vtkSlabcastDatasetReader::CanReadFile(const char* fname)
{
  if (!fname || !*fname)
  {
    return 0;
  }
  const std::string path = fname;
  const std::string::size_type slash = path.find_last_of('/');
  if (path.substr(slash == std::string::npos ? 0 : slash + 1) == "dataset.json")
  {
    return 1;
  }
  try
  {
    slabcast::read_dataset(path);
    return 1;
  }
  catch (const std::exception&)
  {
    return 0;
  }
}

//------------------------------------------------------------------------------
int vtkSlabcastDatasetReader::RequestInformation(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  this->Dataset.reset();
  if (!this->FileName || !*this->FileName)
  {
    vtkErrorMacro(<< "no FileName set: give the path of a dataset.json");
    return 0;
  }
  // Read again on every update of the information: a recording still being
  // made lists more steps each time.
  auto d = std::make_unique<slabcast::Dataset>();
  try
  {
    *d = slabcast::read_dataset(this->FileName);
  }
  catch (const std::exception& e)
  {
    vtkErrorMacro(<< e.what());
    return 0;
  }

  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  // Within slabcast::kMaxAxis (read_dataset checked), each size fits an int.
  const int whole[6] = { 0, static_cast<int>(d->dims.nx) - 1, 0, static_cast<int>(d->dims.ny) - 1, 0,
    static_cast<int>(d->dims.nz) - 1 };
  outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole, 6);
  outInfo->Set(vtkDataObject::ORIGIN(), d->origin, 3);
  outInfo->Set(vtkDataObject::SPACING(), d->spacing, 3);
  vtkDataObject::SetPointDataActiveScalarInfo(outInfo, VTK_FLOAT, 1);

  const std::vector<double> times = slabcast_vtk::DatasetTimes(*d);
  outInfo->Set(vtkStreamingDemandDrivenPipeline::TIME_STEPS(), times.data(), static_cast<int>(times.size()));
  const double range[2] = { times.front(), times.back() };
  outInfo->Set(vtkStreamingDemandDrivenPipeline::TIME_RANGE(), range, 2);

  // Pieces along z, as vtkSlabcastReader's: a piece is whole planes, which
  // each rank reads from the step files without reading the others'.
  outInfo->Set(CAN_PRODUCE_SUB_EXTENT(), 1);
  outInfo->Set(vtkExtentTranslator::UPDATE_SPLIT_MODE(), vtkExtentTranslator::Z_SLAB_MODE);
  this->Dataset = std::move(d);
  return 1;
}

//------------------------------------------------------------------------------
int vtkSlabcastDatasetReader::RequestData(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  vtkImageData* output = vtkImageData::GetData(outInfo);
  output->Initialize();
  if (!this->Dataset)
  {
    return 0; // RequestInformation has reported why
  }
  const slabcast::Dataset& d = *this->Dataset;

  // No time asked (a plain update): the first step.
  const double time = outInfo->Has(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP())
    ? outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_TIME_STEP())
    : -std::numeric_limits<double>::infinity();
  const slabcast::DatasetStep& step = *slabcast_vtk::DatasetStepAt(d, time);

  int ext[6];
  outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT(), ext);
  output->SetOrigin(d.origin);
  output->SetSpacing(d.spacing);
  if (ext[0] > ext[1] || ext[2] > ext[3] || ext[4] > ext[5])
  {
    // More pieces than planes: this piece is empty, which is not an error.
    slabcast_vtk::AddDatasetStepFieldData(output->GetFieldData(), step);
    output->GetInformation()->Set(vtkDataObject::DATA_TIME_STEP(), static_cast<double>(step.number));
    return 1;
  }
  if (ext[0] < 0 || ext[1] >= d.dims.nx || ext[2] < 0 || ext[3] >= d.dims.ny || ext[4] < 0 ||
    ext[5] >= d.dims.nz)
  {
    vtkErrorMacro(<< this->FileName << ": requested extent " << ext[0] << ".." << ext[1] << ", " << ext[2]
                  << ".." << ext[3] << ", " << ext[4] << ".." << ext[5] << " lies outside the volume "
                  << slabcast::to_string(d.dims));
    return 0;
  }

  vtkSmartPointer<vtkFloatArray> values;
  vtkSmartPointer<vtkUnsignedCharArray> ages;
  try
  {
    values = ReadExtent<vtkFloatArray>(d.step_path(step), step.codec, d.dims, ext);
    if (this->AgeArray && !step.ages.empty())
    {
      ages = ReadExtent<vtkUnsignedCharArray>(d.directory + "/" + step.ages, step.codec, d.dims, ext);
    }
  }
  catch (const std::exception& e)
  {
    vtkErrorMacro(<< e.what());
    return 0;
  }

  output->SetExtent(ext);
  slabcast_vtk::NameArrays(d.field, values, ages);
  output->GetPointData()->SetScalars(values);
  if (ages)
  {
    output->GetPointData()->AddArray(ages);
  }
  slabcast_vtk::AddDatasetStepFieldData(output->GetFieldData(), step);
  // The step's own time, not the time asked: ParaView shows which step a
  // time between two steps gave.
  output->GetInformation()->Set(vtkDataObject::DATA_TIME_STEP(), static_cast<double>(step.number));
  return 1;
}

//------------------------------------------------------------------------------
void vtkSlabcastDatasetReader::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "FileName: " << (this->FileName ? this->FileName : "(none)") << "\n";
  os << indent << "AgeArray: " << this->AgeArray << "\n";
  os << indent << "Steps: " << (this->Dataset ? this->Dataset->steps.size() : 0) << "\n";
}
