// vtkSlabcastReader's History: the last steps taken, kept pinned and offered
// as time steps (slabcast/step_history.h), apart from the rest of the reader
// for its length.
#include "vtkSlabcastReader.h"

#include "SlabcastAgreement.h"
#include "SlabcastReaderState.h"

#include "vtkInformation.h"
#include "vtkStreamingDemandDrivenPipeline.h"

#include "slabcast/step_history.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

//------------------------------------------------------------------------------
void vtkSlabcastReader::TakeHistory(vtkInformation* outInfo)
{
  SlabcastReaderState& in = *this->Internals;
  int depth = this->Completeness == WHOLE_STEPS ? this->History : 0;
  if (depth > 0 && slabcast_vtk::ProcessCount() > 1)
  {
    if (in.HistoryCapWarned != this->History)
    {
      vtkWarningMacro(<< "History keeps steps in one process only: off with "
                      << slabcast_vtk::ProcessCount() << " ranks");
      in.HistoryCapWarned = this->History;
    }
    depth = 0;
  }
  const std::map<int, slabcast::SlabMappingPtr> slabs =
    depth > 0 ? in.VisibleSlabs() : std::map<int, slabcast::SlabMappingPtr>{};
  int buffers = slabcast::kMaxBuffers;
  std::uint64_t pinned_bytes = 0;
  for (const auto& kv : slabs)
  {
    buffers = std::min(buffers, kv.second->buffers());
    pinned_bytes += kv.second->layout().buffer_stride + kv.second->layout().age_stride;
  }
  const int allowed = slabcast::StepHistory::depth_allowed(depth, buffers);
  if (depth > 0 && !slabs.empty() && allowed < depth && in.HistoryCapWarned != this->History)
  {
    vtkWarningMacro(<< in.DescriptorPath << ": History " << depth << " needs receive --buffers " << depth + 2
                    << " (the receiver has " << buffers << "): it keeps " << allowed
                    << " of them; each step kept holds " << (pinned_bytes >> 20)
                    << " MiB of the receiver's shared memory");
    in.HistoryCapWarned = this->History;
  }
  in.History.set_depth(slabs.empty() ? 0 : allowed);
  in.History.take(slabs);
  const std::vector<std::int64_t> steps = in.History.steps();
  if (steps.empty())
  {
    outInfo->Remove(vtkStreamingDemandDrivenPipeline::TIME_STEPS());
    outInfo->Remove(vtkStreamingDemandDrivenPipeline::TIME_RANGE());
    return;
  }
  const std::vector<double> times(steps.begin(), steps.end());
  outInfo->Set(vtkStreamingDemandDrivenPipeline::TIME_STEPS(), times.data(), static_cast<int>(times.size()));
  const double range[2] = { times.front(), times.back() };
  outInfo->Set(vtkStreamingDemandDrivenPipeline::TIME_RANGE(), range, 2);
}
