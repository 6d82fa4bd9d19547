/**
 * @class vtkSlabcastVolumeRepresentation
 * @brief ParaView's volume representation of image data, drawn by
 * vtkSlabcastVolumeMapper ("Slabcast Volume" in the representation list).
 *
 * Everything else is ParaView's own: the transfer functions and unit
 * distance (shared with "Volume"), the delivery of each rank's piece, the
 * ordered compositing across ranks (IceT), the outline on ranks without data.
 */
#ifndef vtkSlabcastVolumeRepresentation_h
#define vtkSlabcastVolumeRepresentation_h

#include "vtkImageVolumeRepresentation.h"
#include "SlabcastRenderModule.h"  // export macro

class vtkSlabcastVolumeMapper;

class SLABCASTRENDER_EXPORT vtkSlabcastVolumeRepresentation : public vtkImageVolumeRepresentation
{
public:
  static vtkSlabcastVolumeRepresentation* New();
  vtkTypeMacro(vtkSlabcastVolumeRepresentation, vtkImageVolumeRepresentation);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  // Forwarded to vtkSlabcastVolumeMapper.
  void SetSlabcastSampleDistance(double distance);
  void SetSlabcastLevel(int level);
  int GetSlabcastRenderedLevel();
  int GetSlabcastFrameCut();
  int GetSlabcastMarches();
  int GetSlabcastThreads();

protected:
  vtkSlabcastVolumeRepresentation();
  ~vtkSlabcastVolumeRepresentation() override;

  // Tells the mapper the whole volume's bounds (every rank's piece).
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

private:
  vtkSlabcastVolumeRepresentation(const vtkSlabcastVolumeRepresentation&) = delete;
  void operator=(const vtkSlabcastVolumeRepresentation&) = delete;

  vtkSlabcastVolumeMapper* Mapper() const;
};

#endif
