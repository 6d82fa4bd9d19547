// A recording on disk: a dataset directory (slabcast/dataset.h) whose
// dataset.json lists only steps whose files are whole and synced. A step's
// files are written under temporary names, synced and renamed, and only then
// listed (dataset.json replaced atomically and synced); a step leaves the list
// before its files go. So a full disk, a killed recorder or a crash of the
// machine leaves every listed step readable and nothing listed half-written;
// what a stopped run left unlisted is removed when the next run opens the
// directory, and the ring goes on from there.
//
// With a budget the ring keeps the newest steps whose files fit it, dropping
// the oldest first; without one every step is kept and a full disk skips steps.
#pragma once

#include "slabcast/dataset.h"

#include <cstdint>
#include <string>

namespace slabcast {

// One step to write: the whole volume's values and ages, and the report.
struct StepToRecord {
    int number = 0;
    const float* values = nullptr;
    const std::uint8_t* ages = nullptr;
    RecordedStep report;
};

class RecordingRing {
public:
    // Opens `directory` (created when missing) as a recording of a volume
    // shaped like `shape` (name, field, units, dims, origin, spacing), sent in
    // slabs of `slab_depth` planes: an empty
    // directory starts one, a recording of the same volume is resumed (its
    // unlisted files removed), anything else is refused with
    // std::runtime_error naming the directory and the problem.
    RecordingRing(const std::string& directory, const Dataset& shape, const std::string& source, int slab_depth,
                  StepCodec codec, std::uint64_t budget_bytes);

    enum class Result { Recorded, DiskFull };
    // Writes a step and lists it; a step of the same number already listed
    // is replaced (it is the newest of that number). DiskFull: the disk had no
    // room even after dropping every older step the budget allows to drop;
    // nothing of the step is left. Other write errors throw.
    Result add(const StepToRecord& step);
    // Counts a step the recorder could not take (the disk was busy).
    void count_skipped(std::uint64_t n = 1);
    // Writes the counters out (at the end of a run).
    void flush();

    const Dataset& dataset() const { return dataset_; }
    std::uint64_t stored_bytes() const { return stored_bytes_; }

private:
    void resume(const Dataset& shape);
    void remove_unlisted();
    bool write_step(const StepToRecord& step, DatasetStep& entry, std::uint64_t& stored);
    void write_file(const std::string& name, const void* data, std::uint64_t bytes, std::uint64_t& stored);
    bool evict_oldest();
    void remove_files(const DatasetStep& s);
    void publish_list();

    Dataset dataset_;
    StepCodec codec_;
    std::uint64_t stored_bytes_ = 0;
    std::uint64_t last_step_bytes_ = 0;  // the newest step's files: the next one's likely size
};

}  // namespace slabcast
