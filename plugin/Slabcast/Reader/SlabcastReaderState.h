// What a vtkSlabcastReader keeps between executions (its Internals): the descriptor, the pool
// of slab mappings, the ranks' last agreement with its pins, what the last
// output shows, and the live state its modification time follows. Private to
// the reader's files (vtkSlabcastReader.cxx).
#ifndef SlabcastReaderState_h
#define SlabcastReaderState_h

#include "SlabcastAgreement.h"
#include "SlabcastArrays.h"
#include "vtkTimeStamp.h"

#include "slabcast/descriptor.h"
#include "slabcast/in_place_hold.h"
#include "slabcast/live_slabs.h"
#include "slabcast/publication.h"
#include "slabcast/slab_figures.h"
#include "slabcast/slab_pool.h"
#include "slabcast/step_choice.h"
#include "slabcast/step_history.h"
#include "slabcast/step_news.h"
#include "slabcast/stitched_planes.h"

#include <cstdint>
#include <map>
#include <optional>
#include <chrono>
#include <string>
#include <vector>

class SlabcastReaderState
{
public:
  slabcast::Descriptor Descriptor;
  bool HaveDescriptor = false;
  std::string DescriptorPath;
  slabcast::SlabPool Pool;
  std::vector<slabcast::SlabMappingPtr> Used; // slabs behind the last output, ascending index

  slabcast_vtk::RangeCache Ranges; // of the last whole step shown
  // What the last output shows of each slab it reads (for StreamFigures): the
  // publication, or for a step being written (Newest data) its step alone.
  std::map<int, slabcast::Publication> Shown;
  // The whole stream's rate and loss over every rank's slabs, as of the last
  // Refresh (gathered there: it is collective), for the output's field data.
  slabcast::SlabFigures StreamTotals;

  // The ranks' last agreement (Refresh): the step, pinned on every slab this
  // rank sees, until the next agreement replaces it.
  bool HaveAgreement = false;
  std::map<int, slabcast::PinnedPublicationPtr> AgreedPins;
  // The last steps taken, pinned, for the time controls (the History property).
  slabcast::StepHistory History;
  int HistoryCapWarned = -1; // the History asked for when its cap was last reported
  // Slabs seen holding no published step, since when (by this reader); those
  // last named in a warning, and when: named again when that changes, or
  // every 10 s while it lasts.
  std::map<int, std::chrono::steady_clock::time_point> NoStepSince;
  std::vector<int> NoStepWarned;
  std::chrono::steady_clock::time_point NoStepWarnedAt;
  // This output's key in the process's StepNews, which the CPU mapper asks
  // while it draws (forgotten with the reader).
  const std::uint64_t NewsKey = slabcast::StepNews::instance().new_key();
  // How long the step shown may keep its buffers pinned in place.
  slabcast::InPlaceHold Hold;
  // The stitched ranges of its last steps, for the next ones from the same buffers.
  slabcast::StitchCache Stitches;
  // What the last Refresh looked at, and the digest taken before it looked:
  // news from then on (a slab publishing while the ranks agreed included) is
  // news to the next poll.
  bool Refreshed = false;
  std::vector<slabcast::SlabMappingPtr> Visible;
  std::uint64_t SignatureAtRefresh = 0;

  // Live state: a digest of what the last execution saw (slabcast::live_signature),
  // compared against the shared memory now. Attempted: some execution (even a
  // failed one) happened.
  bool Attempted = false;
  slabcast::LiveFollow Follow = slabcast::LiveFollow::Publications;
  std::uint64_t SignatureAtExecute = 0;
  std::uint64_t SignatureSeenByMTime = 0;
  vtkTimeStamp LiveTime;
  // GetMTime found news no poll had announced, so whatever asked for the
  // modification time re-executes this reader on its own. When that happens
  // inside a render, after the representation took the output, the view keeps
  // the older step and nothing marks it for another: the next poll says so.
  bool NewsSeenOnlyByMTime = false;

  std::uint64_t Signature() const
  {
    return slabcast::live_signature(this->DescriptorPath, this->Used, this->Follow);
  }

  void RecordExecution()
  {
    this->Attempted = true;
    this->SignatureAtExecute = this->Signature();
    this->SignatureSeenByMTime = this->SignatureAtExecute;
  }

  // The buffers an output shows: following writes (Newest data), each slab's
  // newest writes; following publications (whole steps), the step Refresh
  // agreed on, still pinned since (or pinned now for a slab this rank did not
  // see then: FromAgreement; one process uses it once, for the output after
  // its Refresh), and when that is gone this rank's newest whole step.
  struct ChosenStep
  {
    slabcast::StepChoice Choice;
    bool FromAgreement = false;
  };
  ChosenStep Choose(std::int64_t agreedStep, const std::map<int, slabcast::SlabMappingPtr>& bySlab,
    std::optional<double> time)
  {
    if (this->Follow == slabcast::LiveFollow::Writes)
    {
      return { slabcast::choose_newest_data(bySlab), false };
    }
    if (this->History.depth() > 0)
    {
      // The held step for the time asked for, on the slabs this output reads.
      if (const slabcast::StepChoice* held = this->History.choose(time))
      {
        slabcast::StepChoice c;
        c.step = held->step;
        c.whole = held->whole;
        for (const auto& kv : bySlab)
        {
          const auto b = held->buffers.find(kv.first);
          if (b == held->buffers.end() || b->second.mapping != kv.second)
          {
            return { slabcast::choose_whole_step(bySlab), false }; // a slab re-opened since: the newest
          }
          c.buffers[kv.first] = b->second;
        }
        return { c, false };
      }
    }
    // One process: the step its last Refresh pinned, while those pins are
    // held (to this output): a newer step pinned beside it would hold one
    // more buffer of every slab while the view still holds the frame before.
    if (this->HaveAgreement && (slabcast_vtk::ProcessCount() > 1 || !this->AgreedPins.empty()))
    {
      if (auto c = slabcast::choose_step(bySlab, agreedStep, this->AgreedPins))
      {
        return { *c, true };
      }
    }
    return { slabcast::choose_whole_step(bySlab), false };
  }

  // Every slab of the descriptor this process can open, by index.
  std::map<int, slabcast::SlabMappingPtr> VisibleSlabs()
  {
    std::map<int, slabcast::SlabMappingPtr> slabs;
    for (const auto& e : this->Descriptor.slabs)
    {
      try
      {
        slabs[e.index] = this->Pool.get(this->Descriptor, this->DescriptorPath, e);
      }
      catch (const std::exception&)
      {
        // Missing or damaged: RequestData names it if this rank reads it.
      }
    }
    return slabs;
  }

  // What the CPU mapper watches while it draws this output (StepNews): a live
  // view of whole steps is replaced once every slab it reads has published
  // since. Not a step back in history, data being written, or a paused
  // reader: those stay.
  void WatchForNewerSteps(const slabcast::StepChoice& choice, bool paused)
  {
    std::vector<slabcast::StepNews::Shown> shown;
    if (choice.whole && this->Follow == slabcast::LiveFollow::Publications && this->History.depth() == 0 && !paused)
    {
      for (const auto& kv : choice.buffers)
      {
        if (!kv.second.pin)
        {
          shown.clear();
          break;
        }
        shown.push_back({ kv.second.mapping, kv.second.pin->publication().number });
      }
    }
    slabcast::StepNews::instance().shows(this->NewsKey, std::move(shown));
  }
};

#endif
