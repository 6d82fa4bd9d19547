// The field data of a reader's output that tells the GUI and scripts which
// step is on screen, how whole it is, and the stream's figures for a frame's
// caption; for a dataset on disk, the step and what its recording reported.
#ifndef SlabcastFieldData_h
#define SlabcastFieldData_h

#include "slabcast/slab_figures.h"
#include "slabcast/slab_file.h"
#include "slabcast/step_choice.h"

#include <cstdint>
#include <vector>

class vtkFieldData;

namespace slabcast
{
struct DatasetStep;
}

namespace slabcast_vtk
{

// The step shown, its age, its timeline ("StepSentNs", "StepBegunNs",
// "StepPublishedNs", "StepPickedNs": CLOCK_REALTIME nanoseconds, 0 unknown
// or, for a step being written, not yet), and per slab (in `choice`'s order) how whole it is
// and the receiver's counters from `headers` (read from the same slabs), so
// the GUI's Information panel and scripts can show what is on screen; and
// "RangeValuesRead", the values read to find the step's ranges (0: the
// receivers measured them all; -1: left to VTK).
void AddSlabFieldData(vtkFieldData* fd, const slabcast::StepChoice& choice,
  const std::vector<slabcast::SlabHeader>& headers, int zeroCopy, bool agreed, std::int64_t rangeValuesRead);

// "SlabcastNewsKey": the key under which the reader says what this output
// shows (slabcast/step_news.h), for the CPU mapper to stop a frame of a step
// a newer one has replaced.
void AddNewsKey(vtkFieldData* fd, std::uint64_t key);

// The whole stream's figures (every slab of every rank): "StreamGbps", the
// receivers' rate over their last status second, and "StreamLossPercent",
// the last finished step's loss, for a frame's caption.
void AddStreamFieldData(vtkFieldData* fd, const slabcast::SlabFigures& totals);

// A dataset's step shown (vtkSlabcastDatasetReader): "Step", and
// for a recorded step what the receivers reported of it when it was
// published ("StepRecords", "StepExpected", "StepHoles",
// "StepComplete", "StepPublishedNs"), so a replay shows how whole
// each step was, as the live reader's field data does.
void AddDatasetStepFieldData(vtkFieldData* fd, const slabcast::DatasetStep& step);

} // namespace slabcast_vtk

#endif
