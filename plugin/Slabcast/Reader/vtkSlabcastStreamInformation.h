/**
 * @class vtkSlabcastStreamInformation
 * @brief The stream figures of a slabcast reader's slabs, gathered from every rank.
 *
 * The GUI's stream monitor asks a slabcast reader proxy for this with
 * vtkSMProxy::GatherInformation. ParaView fills one on every data-server rank
 * from that rank's reader (CopyFromObject: the slabs it can open in its host's
 * shared memory, read now, and the step its output shows) and merges them on
 * the way to the client (AddInformation), so a GUI connected to a multi-rank
 * pvserver on other hosts sees every slab without reading /dev/shm itself.
 * Nothing here re-executes the pipeline.
 */
#ifndef vtkSlabcastStreamInformation_h
#define vtkSlabcastStreamInformation_h

#include "SlabcastReaderModule.h" // for export macro
#include "vtkPVInformation.h"

#include <memory> // for the figures' storage

namespace slabcast
{
struct SlabFigures;
}

class SLABCASTREADER_EXPORT vtkSlabcastStreamInformation : public vtkPVInformation
{
public:
  static vtkSlabcastStreamInformation* New();
  vtkTypeMacro(vtkSlabcastStreamInformation, vtkPVInformation);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  void CopyFromObject(vtkObject* object) override;
  void AddInformation(vtkPVInformation* other) override;
  void CopyToStream(vtkClientServerStream* stream) override;
  void CopyFromStream(const vtkClientServerStream* stream) override;

  /// Number of slabs gathered, ascending slab index.
  int GetNumberOfSlabs();

#ifndef __VTK_WRAP__
  /// Slab i's figures (0 <= i < GetNumberOfSlabs()).
  const slabcast::SlabFigures& GetSlab(int i);
#endif

protected:
  vtkSlabcastStreamInformation();
  ~vtkSlabcastStreamInformation() override;

private:
  vtkSlabcastStreamInformation(const vtkSlabcastStreamInformation&) = delete;
  void operator=(const vtkSlabcastStreamInformation&) = delete;

  class vtkInternals;
  std::unique_ptr<vtkInternals> Internals;
};

#endif
