#include "SlabcastFieldData.h"

#include "vtkDoubleArray.h"
#include "vtkFieldData.h"
#include "vtkIntArray.h"
#include "vtkNew.h"
#include "vtkTypeInt64Array.h"
#include "vtkTypeUInt64Array.h"

#include "slabcast/clock.h"
#include "slabcast/dataset.h"
#include "slabcast/publication.h"

#include <cmath>
#include <limits>

namespace slabcast_vtk
{

namespace
{

template <class ArrayT, class Fn>
void AddPerSlab(vtkFieldData* fd, const char* name, const slabcast::StepChoice& choice,
  const std::vector<slabcast::SlabHeader>& headers, Fn value)
{
  vtkNew<ArrayT> a;
  a->SetName(name);
  std::size_t i = 0;
  for (const auto& kv : choice.buffers)
  {
    a->InsertNextValue(value(kv.second, headers[i++]));
  }
  fd->AddArray(a);
}

template <class ArrayT>
void AddOne(vtkFieldData* fd, const char* name, typename ArrayT::ValueType v)
{
  vtkNew<ArrayT> a;
  a->SetName(name);
  a->InsertNextValue(v);
  fd->AddArray(a);
}

} // namespace

void AddNewsKey(vtkFieldData* fd, std::uint64_t key)
{
  AddOne<vtkTypeUInt64Array>(fd, "SlabcastNewsKey", key);
}

void AddSlabFieldData(vtkFieldData* fd, const slabcast::StepChoice& choice,
  const std::vector<slabcast::SlabHeader>& headers, int zeroCopy, bool agreed, std::int64_t rangeValuesRead)
{
  using B = slabcast::SlabBuffer;
  using H = slabcast::SlabHeader;
  // The step's timeline (CLOCK_REALTIME ns, 0 unknown): sent when the first
  // of its slabs left its sender (the senders' clocks; unknown when a slab's
  // stamp did not come), begun when the first of its packets arrived,
  // published when the last of its slabs was whole, picked now, by this
  // reader. Several ranks: the earliest send and the latest publication are
  // the ranges' ends.
  const std::int64_t picked = slabcast::realtime_ns();
  std::int64_t published = 0, sent = 0, begun = 0;
  bool every_stamp = !choice.buffers.empty();
  for (const auto& kv : choice.buffers)
  {
    if (!kv.second.pin)
    {
      every_stamp = false;
      continue;
    }
    const slabcast::Publication& p = kv.second.pin->publication();
    published = std::max(published, p.published_ns);
    every_stamp = every_stamp && p.sent_ns > 0;
    if (p.sent_ns > 0)
    {
      sent = sent == 0 ? p.sent_ns : std::min(sent, p.sent_ns);
    }
    if (p.begun_ns > 0)
    {
      begun = begun == 0 ? p.begun_ns : std::min(begun, p.begun_ns);
    }
  }
  AddOne<vtkTypeInt64Array>(fd, "Step", choice.step);
  AddOne<vtkDoubleArray>(
    fd, "StepAgeMs", choice.whole && published > 0 ? (picked - published) / 1e6 : 0.0);
  AddOne<vtkTypeInt64Array>(fd, "StepSentNs", choice.whole && every_stamp ? sent : 0);
  AddOne<vtkTypeInt64Array>(fd, "StepBegunNs", choice.whole ? begun : 0);
  AddOne<vtkTypeInt64Array>(fd, "StepPublishedNs", choice.whole ? published : 0);
  AddOne<vtkTypeInt64Array>(fd, "StepPickedNs", picked);
  AddOne<vtkIntArray>(fd, "WholeStep", choice.whole ? 1 : 0);
  AddOne<vtkIntArray>(fd, "StepAgreed", agreed);
  AddOne<vtkIntArray>(fd, "ZeroCopy", zeroCopy);
  AddOne<vtkTypeInt64Array>(fd, "RangeValuesRead", rangeValuesRead);
  AddPerSlab<vtkIntArray>(fd, "SlabIndex", choice, headers,
    [](const B& b, const H&) { return b.mapping->geometry().index; });
  AddPerSlab<vtkIntArray>(fd, "SlabBuffer", choice, headers, [](const B& b, const H&) { return b.buffer; });
  // How whole each slab's step is: from its publication, or, for a step
  // being written (Newest data), from the live counters.
  AddPerSlab<vtkDoubleArray>(fd, "Completeness", choice, headers, [](const B& b, const H& h) {
    if (b.pin)
    {
      return b.pin->publication().completeness();
    }
    const double expected = static_cast<double>(h.live.step_expected.load());
    return expected > 0 ? static_cast<double>(h.live.step_records.load()) / expected : 0.0;
  });
  AddPerSlab<vtkDoubleArray>(fd, "HoleFraction", choice, headers, [](const B& b, const H& h) {
    if (b.pin)
    {
      return b.pin->publication().hole_fraction();
    }
    const double expected = static_cast<double>(h.live.step_expected.load());
    return expected > 0 ? 1.0 - static_cast<double>(h.live.step_records.load()) / expected : 1.0;
  });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabStep", choice, headers, [](const B& b, const H& h) {
    return b.pin ? b.pin->publication().step : h.live.step.load();
  });
  AddPerSlab<vtkTypeInt64Array>(
    fd, "SlabWriting", choice, headers, [](const B&, const H& h) { return h.live.step.load(); });
  AddPerSlab<vtkDoubleArray>(fd, "SlabLossPercent", choice, headers,
    [](const B&, const H& h) { return h.live.last_step_loss_ppm.load() / 1e4; });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabPackets", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.packets.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabRejected", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.rejected.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabStale", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.stale.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabDuplicates", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.duplicates.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabDroppedSteps", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.dropped_steps.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabPublications", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.publications.load()); });
  // Forward error correction: the shown step's datagrams rebuilt from parity,
  // and each slab's datagrams rebuilt and lost beyond repair, all steps.
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabStepRepaired", choice, headers, [](const B& b, const H&) {
    return static_cast<vtkTypeInt64>(b.pin ? b.pin->publication().repaired : 0);
  });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabRepaired", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.fec_repaired.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabUnrepaired", choice, headers,
    [](const B&, const H& h) { return static_cast<vtkTypeInt64>(h.live.fec_unrepaired.load()); });
}

void AddStreamFieldData(vtkFieldData* fd, const slabcast::SlabFigures& totals)
{
  AddOne<vtkDoubleArray>(fd, "StreamGbps", totals.gbps);
  AddOne<vtkDoubleArray>(fd, "StreamLossPercent", totals.last_step_loss_percent);
}

void AddDatasetStepFieldData(vtkFieldData* fd, const slabcast::DatasetStep& step)
{
  AddOne<vtkTypeInt64Array>(fd, "Step", step.number);
  if (!step.recorded)
  {
    return;
  }
  const slabcast::RecordedStep& r = *step.recorded;
  // Signed 64-bit, as the live reader's counters: counts of a volume's
  // values fit in 63 bits.
  AddOne<vtkTypeInt64Array>(fd, "StepRecords", static_cast<vtkTypeInt64>(r.records));
  AddOne<vtkTypeInt64Array>(fd, "StepExpected", static_cast<vtkTypeInt64>(r.expected));
  AddOne<vtkTypeInt64Array>(fd, "StepHoles", static_cast<vtkTypeInt64>(r.holes));
  AddOne<vtkTypeInt64Array>(fd, "StepRepaired", static_cast<vtkTypeInt64>(r.repaired));
  AddOne<vtkIntArray>(fd, "StepComplete", r.complete ? 1 : 0);
  AddOne<vtkTypeInt64Array>(fd, "StepPublishedNs", r.published_ns);
}

} // namespace slabcast_vtk
