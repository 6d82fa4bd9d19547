// `slabcast plot`: the figures of a run from the roles' --stats-json files,
// like the paper's throughput plots (Balman et al., 2012, sections 4 and 5):
// drawn by slabcast_plot.py (python3 + matplotlib), which lies next to the
// binary in the build tree (server/plot/ in the sources).
#pragma once

#include "demo/demo_plan.h"

#include <string>
#include <vector>

namespace slabcast {

// The command that writes OUT-throughput.png, OUT-loss.png, OUT-latency.png,
// OUT-transfer.png and OUT-series.json (`out` as OUT.png) from `files`. Throws
// std::runtime_error, in one line saying what to install or build, when the
// script, python3 or matplotlib is missing.
std::vector<std::string> plot_command(const std::vector<std::string>& files, const std::string& out);

// `slabcast demo`'s figures: for each side, its receiver's and shufflers'
// files in OUT_DIR/logs/ and the controller's, into OUT_DIR/plots/SIDE-*.png.
// A failure is a warning: the run itself went as it went.
void plot_demo_run(const std::string& out_dir, const std::vector<DemoSide>& sides);

}  // namespace slabcast
