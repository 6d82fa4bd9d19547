/**
 * @class vtkSlabcastDatasetReader
 * @brief Reads a slabcast dataset on disk (`dataset.json`) as a time series.
 *
 * A dataset is a directory of float32 volumes, one file a step, raw or one
 * LZ4 frame each, described by `dataset.json` (slabcast/dataset.h); a
 * recording of a live stream (`slabcast record`) is one, whose steps also
 * carry their ages and what the receiver reported of them. Each step's
 * number is its time: ParaView's animation steps through them in order,
 * whatever order the dataset lists them in.
 *
 * The output is a vtkImageData with one float32 point array named after the
 * dataset's field and, for a step recorded with its ages, a uint8 point
 * array "<field>_age" (as vtkSlabcastReader's: how many steps old each value
 * is). Pieces are z-slabs, and each reads only its own planes of the step's
 * files (an LZ4 frame is still decoded from its start, and to its end for
 * its checksum), so MPI ranks share the reading. Field data: the step
 * ("Step") and, for a recorded step, the receiver's report
 * (slabcast_vtk::AddDatasetStepFieldData).
 *
 * A missing or damaged description or step file is reported as an error
 * naming the file and the problem, and the update fails (no output).
 */
#ifndef vtkSlabcastDatasetReader_h
#define vtkSlabcastDatasetReader_h

#include "SlabcastReaderModule.h" // for export macro
#include "vtkImageAlgorithm.h"

#include <memory> // for the dataset read

namespace slabcast
{
struct Dataset;
}

class SLABCASTREADER_EXPORT vtkSlabcastDatasetReader : public vtkImageAlgorithm
{
public:
  static vtkSlabcastDatasetReader* New();
  vtkTypeMacro(vtkSlabcastDatasetReader, vtkImageAlgorithm);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  ///@{
  /// The dataset's `dataset.json`, or its directory.
  vtkSetStringMacro(FileName);
  vtkGetStringMacro(FileName);
  ///@}

  ///@{
  /// Whether the output carries "<field>_age" where the step has ages
  /// (default on): off spares reading a file a quarter the values' size.
  vtkSetMacro(AgeArray, vtkTypeBool);
  vtkGetMacro(AgeArray, vtkTypeBool);
  vtkBooleanMacro(AgeArray, vtkTypeBool);
  ///@}

  /// 1 for a file named dataset.json or any readable dataset description,
  /// else 0. ParaView's File > Open asks it of every file its extension
  /// (json) matches, so that other JSON files are not offered to this reader,
  /// while a damaged dataset.json still is, and shows this reader's error.
  int CanReadFile(const char* fname);

protected:
  vtkSlabcastDatasetReader();
  ~vtkSlabcastDatasetReader() override;

  int RequestInformation(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;
  int RequestData(vtkInformation*, vtkInformationVector**, vtkInformationVector*) override;

  char* FileName = nullptr;
  vtkTypeBool AgeArray = 1;

private:
  vtkSlabcastDatasetReader(const vtkSlabcastDatasetReader&) = delete;
  void operator=(const vtkSlabcastDatasetReader&) = delete;

  // As RequestInformation last read it; none when that failed.
  std::unique_ptr<slabcast::Dataset> Dataset;
};

#endif
