// What a vtkSlabcastReader tells of the streams behind it: each slab's
// figures for the stream monitor (with the readers that pin its buffers),
// and the warning naming a slab that holds no step to show.
#include "vtkSlabcastReader.h"

#include "SlabcastReaderState.h"

#include "slabcast/clock.h"
#include "slabcast/descriptor.h"
#include "slabcast/reader_pins.h"
#include "slabcast/slab_figures.h"
#include "slabcast/slab_pool.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

//------------------------------------------------------------------------------
// A warning naming each slab of `slabs` that has held no published step for
// kNoStepGrace, and since when: named again when the slabs change, or every
// 10 s while it lasts. The grace: as a stream begins, its slabs publish their
// first step one after another, each a moment after the first.
void vtkSlabcastReader::ReportSlabsWithoutStep(const std::map<int, slabcast::SlabMappingPtr>& slabs)
{
  SlabcastReaderState& in = *this->Internals;
  constexpr auto kNoStepGrace = std::chrono::seconds(2);
  const std::int64_t now = slabcast::realtime_ns();
  const auto at = std::chrono::steady_clock::now();
  std::map<int, std::chrono::steady_clock::time_point> since;
  std::vector<int> named;
  std::string text;
  for (const slabcast::SlabFigures& f : slabcast::slabs_without_step(slabs, now))
  {
    const auto seen = in.NoStepSince.find(f.slab);
    const auto first = since[f.slab] = seen == in.NoStepSince.end() ? at : seen->second;
    if (at - first < kNoStepGrace)
    {
      continue;
    }
    named.push_back(f.slab);
    text += (text.empty() ? "" : "; ") + slabcast::no_step_text(f, now) + " (seen so for " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(at - first).count()) + " s)";
  }
  in.NoStepSince = since; // a slab that holds a step again is forgotten
  const bool told = named == in.NoStepWarned && at - in.NoStepWarnedAt < std::chrono::seconds(10);
  in.NoStepWarned = named;
  if (named.empty() || told)
  {
    return;
  }
  in.NoStepWarnedAt = at;
  vtkWarningMacro(<< in.DescriptorPath << ": nothing shown: " << text);
}

//------------------------------------------------------------------------------
std::vector<slabcast::SlabFigures> vtkSlabcastReader::StreamFigures(bool nameReaders)
{
  SlabcastReaderState& in = *this->Internals;
  std::vector<slabcast::SlabFigures> figures;
  const std::string path = this->FileName ? this->FileName : "";
  slabcast::Descriptor d;
  try
  {
    d = slabcast::read_descriptor(path);
  }
  catch (const std::exception&)
  {
    return figures; // no descriptor (yet): nothing to show, RequestInformation says why
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::int64_t now = slabcast::realtime_ns();
  std::vector<slabcast::SlabMappingPtr> mapped; // in the order of `figures`
  for (const auto& e : d.slabs)
  {
    try
    {
      const slabcast::SlabMappingPtr m = in.Pool.get(d, path, e);
      slabcast::SlabHeader h{};
      if (!m->read_header(h))
      {
        continue;
      }
      const auto shown = in.Shown.find(e.index);
      const bool showing = shown != in.Shown.end();
      figures.push_back(slabcast::slab_figures(
        h, showing ? shown->second.step : -1, showing ? &shown->second : nullptr, now));
      figures.back().host = host;
      mapped.push_back(m);
    }
    catch (const std::exception&)
    {
      // Not on this host (another rank has it), or damaged: RequestData names it.
    }
  }
  if (nameReaders)
  {
    std::vector<const slabcast::SlabMapping*> slabs;
    for (const auto& m : mapped)
    {
      slabs.push_back(m.get());
    }
    const auto readers = slabcast::readers_of(slabs);
    for (std::size_t i = 0; i < figures.size(); ++i)
    {
      figures[i].readers = readers.at(mapped[i]->path());
    }
  }
  return figures;
}

