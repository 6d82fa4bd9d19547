// The dataset `slabcast demo` streams: --dataset as given, or a cosmology
// dataset generated once by slabcast-datagen and cached (data/README.md), and
// the colour range the whole run is rendered with.
#pragma once

#include "deploy/demo_options.h"

#include "slabcast/volume.h"

#include <string>

namespace slabcast {

struct DemoDataset {
    std::string directory;
    std::string range;  // colour range "LO,HI"
};

// Generates the dataset with the program `datagen` when it is not cached yet;
// throws std::runtime_error when it cannot be had, is not of `dims`, or a stop
// is requested while it is generated.
// --dataset-steps, or by default 20 steps, fewer when that would pass 8 GiB
// (a 1024^3 step is 4 GiB; the SC11 demo looped a short series too), at least 4.
int demo_dataset_steps(const DemoOptions& o, const Dims& dims);

DemoDataset prepare_demo_dataset(const DemoOptions& o, const Dims& dims, const std::string& datagen);

}  // namespace slabcast
