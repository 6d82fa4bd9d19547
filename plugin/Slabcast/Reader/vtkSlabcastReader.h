/**
 * @class vtkSlabcastReader
 * @brief Reads a slabcast volume: shared-memory slabs described by a `.slabcast` file.
 *
 * The output is a vtkImageData with one float32 point array named after the
 * field and a uint8 point array "<field>_age" (0: the value arrived in the step shown,
 * k: it is k steps old, filled in where the step lost it, 255: never arrived).
 * When the requested extent lies inside one slab's stored planes (one rank per
 * slab, or a one-slab volume) both point straight into the slab's buffer: no
 * copy, and an update costs the same whatever the slab size. Otherwise the
 * extent is assembled from the slabs plane by plane.
 *
 * Completeness "Whole steps" (the default): every frame is one published step,
 * the newest that every slab read holds, pinned so the receiver leaves it alone
 * while anything points into it. With several MPI ranks the ranks agree on the
 * step in Refresh(), a command ParaView runs on every rank in order (scripts call
 * it when NeedsUpdate says a new step exists; slabcast_render.py does). "Newest
 * data": each slab's buffer being written, as it fills.
 *
 * Live: GetNeedsUpdate() is what the GUI's LiveSource timer (and Python, through
 * an information property) polls on the root rank. With one process it marks
 * the reader modified itself; with several in "Whole steps" only Refresh()
 * does, so that no rank re-executes on its own slabs' news.
 *
 * The zero-copy arrays are read-only memory: a filter that writes into its
 * input array in place would fault. ParaView's filters copy before they write.
 */
#ifndef vtkSlabcastReader_h
#define vtkSlabcastReader_h

#include "SlabcastReaderModule.h" // for export macro
#include "vtkImageAlgorithm.h"

#include <map>    // for ReportSlabsWithoutStep
#include <memory> // for ReportSlabsWithoutStep
#include <vector> // for StreamFigures

namespace slabcast
{
struct SlabFigures;
class SlabMapping;
}
class SlabcastReaderState; // private to the reader's files (SlabcastReaderState.h)

class SLABCASTREADER_EXPORT vtkSlabcastReader : public vtkImageAlgorithm
{
public:
  static vtkSlabcastReader* New();
  vtkTypeMacro(vtkSlabcastReader, vtkImageAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  enum CompletenessModes
  {
    WHOLE_STEPS = 0,
    NEWEST_DATA = 1
  };
  /// Where the values a step lost come from: as the receiver published them
  /// (receive --fill), or from coarser samples of the same step where they
  /// came (the nearest fill, slabcast/progressive_rows.h), applied by the
  /// reader to a copy of each slab that lost values. Whole steps only.
  enum FillModes
  {
    FILL_AS_PUBLISHED = 0,
    FILL_NEAREST = 1
  };

  ///@{
  /// The `.slabcast` descriptor.
  vtkSetStringMacro(FileName);
  vtkGetStringMacro(FileName);
  ///@}

  ///@{
  /// While paused, new steps do not mark the reader modified.
  vtkSetMacro(Pause, vtkTypeBool);
  vtkGetMacro(Pause, vtkTypeBool);
  vtkBooleanMacro(Pause, vtkTypeBool);
  ///@}

  ///@{
  /// WHOLE_STEPS (default) or NEWEST_DATA, see the class description.
  vtkSetClampMacro(Completeness, int, WHOLE_STEPS, NEWEST_DATA);
  vtkGetMacro(Completeness, int);
  ///@}

  ///@{
  /// FILL_AS_PUBLISHED (default) or FILL_NEAREST, see FillModes.
  vtkSetClampMacro(Fill, int, FILL_AS_PUBLISHED, FILL_NEAREST);
  vtkGetMacro(Fill, int);
  ///@}

  ///@{
  /// Whether the output carries "<field>_age" (default on). Off spares the
  /// copy of it that a piece spanning several slabs needs, a quarter of the
  /// values' memory (512 MiB a rank at 1024^3 on 2 ranks): a renderer that
  /// does not show the holes turns it off.
  vtkSetMacro(AgeArray, vtkTypeBool);
  vtkGetMacro(AgeArray, vtkTypeBool);
  vtkBooleanMacro(AgeArray, vtkTypeBool);
  ///@}

  ///@{
  /// Steps kept reachable as time steps (default 0: none, no time steps): the
  /// reader keeps the last History whole steps it took pinned in the
  /// receiver's buffers, so ParaView's time controls step back through them
  /// while the stream goes on, and a time that picks the newest follows the
  /// stream again. Costs no copy, but the receiver needs History + 2 buffers
  /// a slab (receive --buffers): fewer hold fewer steps, with a warning. One
  /// process only (with several ranks it is off, with a warning).
  vtkSetClampMacro(History, int, 0, 14);
  vtkGetMacro(History, int);
  ///@}

  ///@{
  /// A level of detail: the output has every Stride-th point along each axis
  /// (default 1: all), copied from the slabs. Where a piece's first plane is
  /// on another host, the nearest plane this host has stands in
  /// (slabcast::select_strided_slabs).
  vtkSetClampMacro(Stride, int, 1, 64);
  vtkGetMacro(Stride, int);
  ///@}

  /// Collective: every rank reads what its slabs hold, the ranks agree on the
  /// newest step all of them hold, each pins it, and the reader is marked
  /// modified on every rank.
  void Refresh();

  /// True when a slab used by the last output has news since (a published
  /// step, or in NEWEST_DATA any write; or the descriptor was rewritten), or
  /// once after the reader re-executed on news no poll announced (GetMTime),
  /// which the view may not have taken. Always false while paused.
  bool GetNeedsUpdate();
  /// Integer form of GetNeedsUpdate() for the information-only property.
  int GetNeedsUpdateFlag() { return this->GetNeedsUpdate() ? 1 : 0; }

  vtkMTimeType GetMTime() override;

  ///@{
  /// About the last output of this process, for tests and status displays.
  /// Step: the step shown (-1: none yet). AgreedStep: the step of the ranks'
  /// last agreement (-1: none). ZeroCopy: 1 when its array points into a slab
  /// mapping, whose address range is [MappingBegin, MappingEnd); 2 when it
  /// spans several slabs whose planes are mapped back to back
  /// (slabcast/stitched_planes.h); 0 when copied. ArrayAddress is the array's data.
  vtkGetMacro(Step, vtkIdType);
  vtkGetMacro(AgreedStep, vtkIdType);
  /// The volume's points along each axis (at stride 1; 0 0 0 before a descriptor is read).
  vtkGetVector3Macro(VolumeDimensions, int);
  vtkGetMacro(ZeroCopy, int);
  vtkGetMacro(ArrayAddress, vtkIdType);
  vtkGetMacro(MappingBegin, vtkIdType);
  vtkGetMacro(MappingEnd, vtkIdType);
  ///@}

#ifndef __VTK_WRAP__
  /// Every slab of the descriptor this process can open: its receiver's live
  /// figures read now, and the step this process's output shows of it. The
  /// stream monitor gathers them from every rank (vtkSlabcastStreamInformation),
  /// with `nameReaders`: each slab's readers and what they pin (a pass over
  /// /proc, for the monitor's twice a second, not for every frame).
  std::vector<slabcast::SlabFigures> StreamFigures(bool nameReaders = false);
#endif

protected:
  vtkSlabcastReader();
  ~vtkSlabcastReader() override;

  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

  char* FileName = nullptr;
  vtkTypeBool Pause = 0;
  int Completeness = WHOLE_STEPS;
  int Fill = FILL_AS_PUBLISHED;
  vtkTypeBool AgeArray = 1;
  int Stride = 1;
  int History = 0;
  vtkIdType Step = -1;
  vtkIdType AgreedStep = -1;
  int VolumeDimensions[3] = { 0, 0, 0 };
  int ZeroCopy = 0;
  vtkIdType ArrayAddress = 0;
  vtkIdType MappingBegin = 0;
  vtkIdType MappingEnd = 0;

private:
  vtkSlabcastReader(const vtkSlabcastReader&) = delete;
  void operator=(const vtkSlabcastReader&) = delete;

  bool FollowsLiveData() const;
  void TakeHistory(vtkInformation* outInfo);
#ifndef __VTK_WRAP__
  void ReportSlabsWithoutStep(const std::map<int, std::shared_ptr<const slabcast::SlabMapping>>& slabs);
#endif

  SlabcastReaderState* Internals;
};

#endif
