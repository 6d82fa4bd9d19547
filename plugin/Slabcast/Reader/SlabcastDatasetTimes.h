// A dataset's steps as ParaView's time: a step's number is its time. The
// dataset lists steps in the order they arrived (a recording may list them
// out of order), ParaView wants the times ascending.
#ifndef SlabcastDatasetTimes_h
#define SlabcastDatasetTimes_h

#include "slabcast/dataset.h"

#include <vector>

namespace slabcast_vtk
{

// The steps' numbers, ascending, as ParaView's TIME_STEPS.
std::vector<double> DatasetTimes(const slabcast::Dataset& d);

// The step shown at `time`: the one with the greatest number at or below it,
// the first step when `time` lies before all of them (as ParaView's own
// readers snap a time between steps). Never null for a dataset with steps.
const slabcast::DatasetStep* DatasetStepAt(const slabcast::Dataset& d, double time);

} // namespace slabcast_vtk

#endif
