// A dataset on disk: a directory of raw little-endian float32 volumes, one file a
// timestep (x fastest), described by `dataset.json` in the same directory.
#pragma once

#include "slabcast/volume.h"

#include <string>
#include <vector>

namespace slabcast {

struct DatasetStep {
    int number = 0;     // the step number; travels as the quad packet's batch
    std::string file;   // file name relative to the dataset directory
};

struct Dataset {
    std::string directory;
    std::string name;
    std::string field = "density";
    std::string units;
    Dims dims;
    std::vector<DatasetStep> steps;

    std::uint64_t step_bytes() const { return static_cast<std::uint64_t>(dims.count()) * 4; }
    std::string step_path(const DatasetStep& s) const { return directory + "/" + s.file; }
    const DatasetStep* find_step(int number) const;
};

// `path` is the directory or its dataset.json. Throws std::runtime_error naming
// the file and the problem.
Dataset read_dataset(const std::string& path);
void write_dataset_descriptor(const Dataset& d);  // writes directory/dataset.json

}  // namespace slabcast
