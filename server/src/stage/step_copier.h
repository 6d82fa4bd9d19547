// Copies one step file into a staging slot a chunk at a time, with large
// sequential reads, so the stager stays responsive while a 4 GB step streams in.
// The slot's name for the step appears only once the copy is whole
// (StagingRing::publish): a shuffler never sees half a step. The kernel copies
// (sendfile, file to file): one copy from the page cache into tmpfs pages the
// slot already has, and no page tables for the stager to fill, which a read()
// into a mapping of the copy paid a page at a time (docs/performance.md,
// "Stager").
#pragma once

#include "slabcast/step_file.h"
#include "slabcast/unique_fd.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace slabcast {

// One step on its way into the staging area: from a local file (StepCopier)
// or from a data host (StepPull). Destroying it unfinished removes the part.
class StepFetch {
public:
    virtual ~StepFetch() = default;
    // Moves up to about `max_bytes` along; true once the whole step is in
    // place. Throws std::runtime_error naming the problem.
    virtual bool advance(std::uint64_t max_bytes) = 0;
    virtual std::uint64_t copied() const = 0;
    virtual std::uint64_t total() const = 0;
};

class StepCopier : public StepFetch {
public:
    // Throws std::runtime_error naming the file when the source cannot be
    // opened or has the wrong size. `slot`: the staging slot's descriptor
    // (StagingRing::fd), at least `expected_bytes` long; the copy starts at its
    // offset 0. `drop_source_cache`: evict what was read from the page cache,
    // for datasets too large to stay cached (they would only push out
    // everything else).
    StepCopier(const std::string& source, int slot, std::uint64_t expected_bytes, bool drop_source_cache);
    StepCopier(const StepCopier&) = delete;
    StepCopier& operator=(const StepCopier&) = delete;

    // Copies up to `max_bytes`; returns true once the whole step is in the slot.
    bool advance(std::uint64_t max_bytes) override;
    std::uint64_t copied() const override { return copied_; }
    std::uint64_t total() const override { return total_; }

private:
    std::string source_;
    UniqueFd in_;
    int slot_;
    std::uint64_t total_ = 0, copied_ = 0;
    bool drop_source_cache_;
};

// A compressed step file (a recording's, slabcast/step_file.h) decoded into
// the slot a megabyte at a time: the piece stays in the cache on its way from
// the decoder to the slot's pages. The frame's checksum is checked at its end,
// before the stager publishes the step.
class StepDecoder : public StepFetch {
public:
    StepDecoder(const std::string& source, StepCodec codec, int slot, std::uint64_t expected_bytes);
    bool advance(std::uint64_t max_bytes) override;
    std::uint64_t copied() const override { return copied_; }
    std::uint64_t total() const override { return total_; }

private:
    StepFileReader reader_;
    int slot_;
    std::uint64_t total_ = 0, copied_ = 0;
    std::vector<std::uint8_t> piece_;
};

}  // namespace slabcast
