// A dataset on disk: a directory of little-endian float32 volumes, one file a
// timestep (x fastest), raw or LZ4 (slabcast/step_file.h), described by
// `dataset.json` in the same directory. A recording of a live stream (`slabcast
// record`) is a dataset whose steps also carry their ages and what the receiver
// reported of them (docs/running.md, "Recording and replay").
#pragma once

#include "slabcast/step_file.h"
#include "slabcast/volume.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slabcast {

// What the receivers published of a recorded step, summed over its slabs.
struct RecordedStep {
    std::uint64_t records = 0;     // owned values that arrived in the step
    std::uint64_t expected = 0;    // owned values of a whole step
    std::uint64_t holes = 0;       // owned values filled from an older step (or never arrived)
    bool complete = false;         // every slab whole
    std::int64_t published_ns = 0; // CLOCK_REALTIME when its last slab was published
    std::int64_t started_ns = 0;   // CLOCK_REALTIME when a receiver began it (0: not seen), what a replay paces by
    std::uint64_t stored_bytes = 0; // both files, as stored (for the recording's budget)
    std::uint64_t repaired = 0;    // datagrams rebuilt from FEC parity (forward error correction)
};

struct DatasetStep {
    int number = 0;     // the step number; travels as the quad packet's batch
    std::string file;   // file name relative to the dataset directory
    StepCodec codec = StepCodec::None;  // of both files
    std::string ages;   // the ages' file ("" none), one byte a value (slab_file.h's kAge*)
    std::optional<RecordedStep> recorded;
};

// A recording's own figures, kept up to date as it runs.
struct RecordingInfo {
    std::string source;            // the .slabcast descriptor recorded
    int slab_depth = 0;            // of the stream recorded (0: not known), what a replay sends by default
    std::int64_t started_ns = 0;   // CLOCK_REALTIME of the first recorder run
    std::uint64_t budget_bytes = 0; // 0: no ring, every step kept
    std::uint64_t steps_recorded = 0;  // all runs, evicted ones included
    std::uint64_t steps_evicted = 0;   // dropped from the ring for newer ones
    std::uint64_t steps_skipped = 0;   // published, not recorded: the disk was busy or full
};

struct Dataset {
    std::string directory;
    std::string name;
    std::string field = "density";
    std::string units;
    Dims dims;
    double origin[3] = {0, 0, 0};
    double spacing[3] = {1, 1, 1};
    std::vector<DatasetStep> steps;
    std::optional<RecordingInfo> recording;

    std::uint64_t step_bytes() const { return static_cast<std::uint64_t>(dims.count()) * 4; }
    std::string step_path(const DatasetStep& s) const { return directory + "/" + s.file; }
    const DatasetStep* find_step(int number) const;
};

// `path` is the directory or its dataset.json. Throws std::runtime_error naming
// the file and the problem. `allow_empty`: a recording that has no step yet.
Dataset read_dataset(const std::string& path, bool allow_empty = false);
// Writes directory/dataset.json atomically; `durable`: fsynced, file and
// directory, before it returns (a recording lists only steps already on disk).
void write_dataset_descriptor(const Dataset& d, bool durable = false);

}  // namespace slabcast
