#include "vtkSlabcastVolumeRepresentation.h"

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

vtkSlabcastVolumeMapper* vtkSlabcastVolumeRepresentation::Mapper() const
{
  return vtkSlabcastVolumeMapper::SafeDownCast(this->VolumeMapper);
}

void vtkSlabcastVolumeRepresentation::SetSlabcastSampleDistance(double distance)
{
  this->Mapper()->SetSampleDistance(distance);
  this->Modified();
}

void vtkSlabcastVolumeRepresentation::SetSlabcastCoarsestLevel(int level)
{
  this->Mapper()->SetCoarsestLevel(level);
  this->Modified();
}

int vtkSlabcastVolumeRepresentation::GetSlabcastRenderedLevel()
{
  return this->Mapper()->GetRenderedLevel();
}

int vtkSlabcastVolumeRepresentation::GetSlabcastRefining()
{
  return this->Mapper()->GetRefining() ? 1 : 0;
}

int vtkSlabcastVolumeRepresentation::GetSlabcastThreads()
{
  return this->Mapper()->GetThreads();
}

void vtkSlabcastVolumeRepresentation::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
}
