#include "vtkSlabcastVolumeRepresentation.h"

#include "vtkImageData.h"
#include "vtkInformationVector.h"
#include "vtkObjectFactory.h"
#include "vtkSlabcastVolumeMapper.h"

vtkStandardNewMacro(vtkSlabcastVolumeRepresentation);

vtkSlabcastVolumeRepresentation::vtkSlabcastVolumeRepresentation()
{
  // The superclass hands its VolumeMapper the input, the array and the
  // actor: replacing the mapper is all it takes.
  this->VolumeMapper = vtkSmartPointer<vtkSlabcastVolumeMapper>::New();
}

vtkSlabcastVolumeRepresentation::~vtkSlabcastVolumeRepresentation() = default;

int vtkSlabcastVolumeRepresentation::RequestData(
  vtkInformation* request, vtkInformationVector** inputVector, vtkInformationVector* outputVector)
{
  const int done = this->Superclass::RequestData(request, inputVector, outputVector);
  // The superclass read the whole extent from the pipeline: the same on every rank.
  double bounds[6] = { 1, 0, 1, 0, 1, 0 };
  vtkImageData* piece = inputVector[0]->GetNumberOfInformationObjects() == 1
    ? vtkImageData::GetData(inputVector[0], 0)
    : nullptr;
  if (piece && this->WholeExtent[0] <= this->WholeExtent[1])
  {
    double origin[3], spacing[3];
    piece->GetOrigin(origin);
    piece->GetSpacing(spacing);
    for (int i = 0; i < 6; ++i)
    {
      bounds[i] = origin[i / 2] + this->WholeExtent[i] * spacing[i / 2];
    }
  }
  this->Mapper()->SetWholeBounds(bounds);
  return done;
}

vtkSlabcastVolumeMapper* vtkSlabcastVolumeRepresentation::Mapper() const
{
  return vtkSlabcastVolumeMapper::SafeDownCast(this->VolumeMapper);
}

void vtkSlabcastVolumeRepresentation::SetSlabcastSampleDistance(double distance)
{
  this->Mapper()->SetSampleDistance(distance);
  this->Modified();
}

void vtkSlabcastVolumeRepresentation::SetSlabcastLevel(int level)
{
  this->Mapper()->SetLevel(level);
  this->Modified();
}

int vtkSlabcastVolumeRepresentation::GetSlabcastRenderedLevel()
{
  return this->Mapper()->GetRenderedLevel();
}

int vtkSlabcastVolumeRepresentation::GetSlabcastFrameCut()
{
  return this->Mapper()->GetFrameCut();
}

int vtkSlabcastVolumeRepresentation::GetSlabcastMarches()
{
  return this->Mapper()->GetMarches();
}

int vtkSlabcastVolumeRepresentation::GetSlabcastThreads()
{
  return this->Mapper()->GetThreads();
}

void vtkSlabcastVolumeRepresentation::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
}
