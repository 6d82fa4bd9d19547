// The dataset `slabcast demo` streams: --dataset as given, or a cosmology
// dataset generated once by slabcast-datagen and cached (data/README.md), and
// the colour range the whole run is rendered with.
#pragma once

#include "demo/demo_options.h"

#include "slabcast/volume.h"

#include <string>

namespace slabcast {

struct DemoDataset {
    std::string directory;
    std::string range;  // colour range "LO,HI"
    // The controller's seconds per step: --step-interval if given; else 3,
    // the paper's pace (Balman et al., 2012, section 4.6), where the dataset
    // stays in the page cache, and 0 (each step when the last is through)
    // where every step is read from disk: a fixed pace outruns the disk, the
    // controller passes steps the stager is still reading, and it gives them up.
    double step_interval = 3;
};

// Generates the dataset with the program `datagen` when it is not cached yet;
// throws std::runtime_error when it cannot be had, is not of `dims`, or a stop
// is requested while it is generated.
// --dataset-steps, or by default 20 steps, fewer when that would pass 8 GiB
// (a 1024^3 step is 4 GiB; the SC11 demo looped a short series too), at least 4.
int demo_dataset_steps(const DemoOptions& o, const Dims& dims);

DemoDataset prepare_demo_dataset(const DemoOptions& o, const Dims& dims, const std::string& datagen);

}  // namespace slabcast
