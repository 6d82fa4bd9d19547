// The render launch `slabcast plan` prints after the daemons: one pvbatch
// rank a slab under mpirun, rank k on the host that receives slab k, so that
// every rank maps its own host's slab without a copy and IceT composites the
// ranks' images over the network, as the SC11 render nodes each held their
// own slabs (Balman et al., 2012, section 4.2). docs/deployment.md,
// "Rendering across hosts".
#pragma once

#include "setup/deploy_plan.h"
#include "setup/install_layout.h"

#include <string>

namespace slabcast {

// A comment line and one mpirun command line (ranks in stream order through
// `--host NAME:SLABS,...`, the programs where `layout` has them); or, when the
// receivers do not each take one run of consecutive streams into the same
// shm_dir (every rank opens one descriptor path), comment lines saying why
// there is no such launch.
std::string render_launch(const PlanVolume& v, const InstallLayout& layout);

}  // namespace slabcast
