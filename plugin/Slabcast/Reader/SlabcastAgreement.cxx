#include "SlabcastAgreement.h"

#include "vtkCommunicator.h"
#include "vtkMultiProcessController.h"

#include "slabcast/slab_figures_wire.h"
#include "slabcast/slab_file.h"

#include <algorithm>

namespace slabcast_vtk
{
namespace
{
// One rank's list on the wire: a count (-1: sees no slab), then (step, time)
// pairs. A slab holds at most kMaxBuffers steps, so the list fits.
constexpr int kListLength = 1 + 2 * slabcast::kMaxBuffers;

vtkMultiProcessController* Controller()
{
  return vtkMultiProcessController::GetGlobalController();
}
} // namespace

int ProcessCount()
{
  vtkMultiProcessController* c = Controller();
  return c ? std::max(1, c->GetNumberOfProcesses()) : 1;
}

std::optional<std::int64_t> AgreeOnStep(
  const std::vector<slabcast::HeldStep>& held, bool seesSlabs)
{
  const int ranks = ProcessCount();
  std::vector<long long> mine(kListLength, 0);
  const std::size_t count = std::min<std::size_t>(held.size(), slabcast::kMaxBuffers);
  mine[0] = seesSlabs ? static_cast<long long>(count) : -1;
  for (std::size_t i = 0; i < count; ++i)
  {
    mine[1 + 2 * i] = held[i].step;
    mine[2 + 2 * i] = held[i].oldest_published_ns;
  }
  std::vector<long long> all(static_cast<std::size_t>(kListLength) * ranks, 0);
  if (ranks > 1)
  {
    Controller()->AllGather(mine.data(), all.data(), kListLength);
  }
  else
  {
    all = mine;
  }
  std::vector<std::vector<slabcast::HeldStep>> perRank;
  for (int r = 0; r < ranks; ++r)
  {
    const long long* list = all.data() + static_cast<std::size_t>(r) * kListLength;
    // A count from another rank is checked like anything that arrives.
    if (list[0] < 0 || list[0] > slabcast::kMaxBuffers)
    {
      continue; // sees no slab: no say
    }
    std::vector<slabcast::HeldStep> steps;
    for (long long i = 0; i < list[0]; ++i)
    {
      steps.push_back(slabcast::HeldStep{ list[1 + 2 * i], list[2 + 2 * i] });
    }
    perRank.push_back(steps);
  }
  return slabcast::agreed_step(perRank);
}

bool AllRanks(bool ok)
{
  if (ProcessCount() <= 1)
  {
    return ok;
  }
  int mine = ok ? 1 : 0, all = 0;
  Controller()->AllReduce(&mine, &all, 1, vtkCommunicator::MIN_OP);
  return all == 1;
}

std::optional<Agreement> AgreeAndPin(const std::map<int, slabcast::SlabMappingPtr>& slabs)
{
  for (int round = 0; round < 4; ++round)
  {
    const auto step = AgreeOnStep(slabcast::steps_held_by_all(slabs), !slabs.empty());
    std::optional<slabcast::StepChoice> choice;
    if (step)
    {
      choice = slabcast::choose_step(slabs, *step);
    }
    if (!AllRanks(step && choice))
    {
      continue;
    }
    Agreement a;
    a.Step = *step;
    for (const auto& kv : choice->buffers)
    {
      a.Pins[kv.first] = kv.second.pin;
    }
    return a;
  }
  return std::nullopt;
}

std::vector<slabcast::SlabFigures> GatherFigures(const std::vector<slabcast::SlabFigures>& mine)
{
  const int ranks = ProcessCount();
  if (ranks <= 1)
  {
    return mine;
  }
  // Each rank's figures as bytes (slab_figures_wire.h), all-gathered: the
  // lengths first, each checked like anything that arrives, then the bytes.
  const std::string mine_bytes = slabcast::encode_figures(mine);
  vtkIdType length = static_cast<vtkIdType>(mine_bytes.size());
  std::vector<vtkIdType> lengths(static_cast<std::size_t>(ranks), 0);
  Controller()->AllGather(&length, lengths.data(), 1);
  std::vector<vtkIdType> offsets(static_cast<std::size_t>(ranks), 0);
  vtkIdType total = 0;
  for (int r = 0; r < ranks; ++r)
  {
    if (lengths[r] < 0 || lengths[r] > static_cast<vtkIdType>(slabcast::kMaxFigureBytes))
    {
      return mine;
    }
    offsets[r] = total;
    total += lengths[r];
  }
  std::vector<char> all(static_cast<std::size_t>(std::max<vtkIdType>(total, 1)));
  std::vector<char> send(mine_bytes.begin(), mine_bytes.end());
  send.resize(std::max<std::size_t>(send.size(), 1)); // a valid pointer even for none
  Controller()->AllGatherV(send.data(), all.data(), length, lengths.data(), offsets.data());
  std::vector<slabcast::SlabFigures> merged;
  for (int r = 0; r < ranks; ++r)
  {
    if (auto theirs = slabcast::decode_figures(all.data() + offsets[r], static_cast<std::size_t>(lengths[r])))
    {
      slabcast::merge_figures(merged, *theirs);
    }
  }
  return merged;
}

} // namespace slabcast_vtk
