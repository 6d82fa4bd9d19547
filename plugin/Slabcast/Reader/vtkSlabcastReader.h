/**
 * @class vtkSlabcastReader
 * @brief Reads a slabcast volume: shared-memory slabs described by a `.slabcast` file.
 *
 * The output is a vtkImageData with one float32 point array named after the field.
 * When the requested extent lies inside one slab's stored planes (one rank per
 * slab, or a one-slab volume) the array points straight into the slab's mapping:
 * no copy, and an update costs the same whatever the slab size. Otherwise the
 * extent is assembled from the slabs plane by plane.
 *
 * Live: the receiver bumps each slab's generation counter when a step starts
 * and ends. GetMTime() folds in the generations of the slabs this process uses,
 * so every rank re-executes when its own slabs change; GetNeedsUpdate() is what
 * the GUI's LiveSource timer (and Python, through an information property) polls.
 *
 * The zero-copy array is read-only memory: a filter that writes into its input
 * array in place would fault. ParaView's filters copy before they write.
 */
#ifndef vtkSlabcastReader_h
#define vtkSlabcastReader_h

#include "SlabcastReaderModule.h" // for export macro
#include "vtkImageAlgorithm.h"

class SLABCASTREADER_EXPORT vtkSlabcastReader : public vtkImageAlgorithm
{
public:
  static vtkSlabcastReader* New();
  vtkTypeMacro(vtkSlabcastReader, vtkImageAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

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

  /// True when a slab used by the last output has moved to another step since
  /// (or the descriptor was rewritten). Marks the reader modified when true, as
  /// ParaView's LiveSource behaviour expects. Always false while paused.
  bool GetNeedsUpdate();
  /// Integer form of GetNeedsUpdate() for the information-only property.
  int GetNeedsUpdateFlag() { return this->GetNeedsUpdate() ? 1 : 0; }

  vtkMTimeType GetMTime() override;

  ///@{
  /// About the last output of this process, for tests and status displays.
  /// Step: the lowest step number any of its slabs is at (-1: none yet).
  /// ZeroCopy: 1 when its array points into a slab mapping, whose address
  /// range is [MappingBegin, MappingEnd); ArrayAddress is the array's data.
  vtkGetMacro(Step, vtkIdType);
  vtkGetMacro(ZeroCopy, int);
  vtkGetMacro(ArrayAddress, vtkIdType);
  vtkGetMacro(MappingBegin, vtkIdType);
  vtkGetMacro(MappingEnd, vtkIdType);
  ///@}

protected:
  vtkSlabcastReader();
  ~vtkSlabcastReader() override;

  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

  char* FileName = nullptr;
  vtkTypeBool Pause = 0;
  vtkIdType Step = -1;
  int ZeroCopy = 0;
  vtkIdType ArrayAddress = 0;
  vtkIdType MappingBegin = 0;
  vtkIdType MappingEnd = 0;

private:
  vtkSlabcastReader(const vtkSlabcastReader&) = delete;
  void operator=(const vtkSlabcastReader&) = delete;

  class vtkInternals;
  vtkInternals* Internals;
};

#endif
