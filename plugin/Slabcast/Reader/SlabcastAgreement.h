// How the MPI ranks of one reader agree on the step a frame shows: each lists
// the steps every slab it sees holds, the lists are gathered on every rank,
// and every rank picks the same step from the same lists
// (slabcast::agreed_step). Collective: every rank must call these in the same
// order, which ParaView guarantees for a command property (the reader's
// Refresh) and for nothing a rank decides on its own.
#ifndef SlabcastAgreement_h
#define SlabcastAgreement_h

#include "slabcast/slab_figures.h"
#include "slabcast/step_choice.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

class vtkMultiProcessController;

namespace slabcast_vtk
{

// The global controller's process count (1 without one).
int ProcessCount();

// `held`: the steps every slab this rank sees holds; `seesSlabs`: false for a
// rank that sees none (it does not constrain the others).
std::optional<std::int64_t> AgreeOnStep(
  const std::vector<slabcast::HeldStep>& held, bool seesSlabs);

// True on every rank when `ok` is true on every rank.
bool AllRanks(bool ok);

// The ranks' step and this rank's pins of it on `slabs` (the slabs it sees).
struct Agreement
{
  std::int64_t Step = -1;
  std::map<int, slabcast::PinnedPublicationPtr> Pins;
};
// Collective: agree on the step published last that every slab of every
// rank holds, and pin it. Every rank runs the same rounds: a pin that fails
// on one rank (the receiver took that buffer between the look and the pin)
// sends all of them round again, a few times. nullopt: no step in common.
std::optional<Agreement> AgreeAndPin(const std::map<int, slabcast::SlabMappingPtr>& slabs);

// Collective: every rank's slab figures (of the slabs it sees), merged by slab
// on every rank, so each can caption a frame with the whole stream's rate and
// loss even when the slabs are on several hosts.
std::vector<slabcast::SlabFigures> GatherFigures(const std::vector<slabcast::SlabFigures>& mine);

} // namespace slabcast_vtk

#endif
