#include "SlabcastDatasetTimes.h"

#include <algorithm>

namespace slabcast_vtk
{

std::vector<double> DatasetTimes(const slabcast::Dataset& d)
{
  std::vector<double> times;
  times.reserve(d.steps.size());
  for (const auto& s : d.steps)
  {
    times.push_back(static_cast<double>(s.number));
  }
  std::sort(times.begin(), times.end());
  return times;
}

const slabcast::DatasetStep* DatasetStepAt(const slabcast::Dataset& d, double time)
{
  const slabcast::DatasetStep* below = nullptr; // greatest number <= time
  const slabcast::DatasetStep* first = nullptr; // smallest number
  for (const auto& s : d.steps)
  {
    const double t = static_cast<double>(s.number);
    if (t <= time && (!below || s.number > below->number))
    {
      below = &s;
    }
    if (!first || s.number < first->number)
    {
      first = &s;
    }
  }
  return below ? below : first;
}

} // namespace slabcast_vtk
