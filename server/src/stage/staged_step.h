// The staged steps a shuffler reads, and the "done" markers by which shufflers
// tell the stager a staged step is free.
//
// A staged step is a name for one of the stager's staging slots
// (StagingRing), which it rewrites step after step: a shuffler maps each slot
// once and keeps the mapping, so the pages are set up in its page tables once,
// not for every step (on a virtual machine that setup cost more than sending
// the packets: docs/performance.md, "Run and quad packets"). While it sends a step it
// holds a shared flock(2) on the slot, which keeps the stager from rewriting
// it under the packets.
#pragma once

#include "slabcast/mapped_region.h"
#include "slabcast/unique_fd.h"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace slabcast {

// One staged file mapped read-only, whole.
class StagedStep {
public:
    const float* values() const { return reinterpret_cast<const float*>(region_.base()); }
    // Maps the pages of [offset, offset+length) now, in one call: faulting them
    // one by one while sending costs more CPU than building the packets. Once
    // per mapping is enough: the stager rewrites the same pages, so what an
    // earlier step mapped stays mapped (prefaulted_end()).
    void prefault(std::size_t offset, std::size_t length) const;
    // The end of the bytes mapped so far, by this step or an earlier one held
    // through this mapping (a step cut short leaves the rest to map).
    std::size_t prefaulted_end() const { return prefaulted_end_; }

private:
    friend class StagedSteps;
    mutable std::size_t prefaulted_end_ = 0;
    UniqueFd fd_;  // kept open: the lock is taken on it, and the inode number stays this file's
    MappedRegion region_;
    dev_t device_ = 0;
    ino_t inode_ = 0;
};

class StagedSteps {
public:
    // Opens the staged step `path`, maps it (or finds the mapping it already
    // has) and holds it until release(): it is the step the caller sends.
    // Returns nullptr and sets `problem` when it is missing, not a plain
    // regular file of `expected_bytes` (the sync packet names it, so a
    // symbolic link, a FIFO and the like are refused), or being restaged
    // under that name at this moment (try again).
    const StagedStep* hold(const std::string& path, std::uint64_t expected_bytes, std::string& problem);
    // Lets the held step go: nothing of it is read after this.
    void release();
    // How many slots are mapped now: those the stager has removed are let go.
    std::size_t mapped() const { return steps_.size(); }

private:
    std::vector<std::unique_ptr<StagedStep>> steps_;  // one a slot, mapped once
    const StagedStep* held_ = nullptr;
};

// "<staging>/<location>.done.<stream>": written by shuffler `stream` when it has
// finished or abandoned the staged step `location`.
std::string done_marker_path(const std::string& staging, const std::string& location, int stream);
void write_done_marker(const std::string& staging, const std::string& location, int stream);

}  // namespace slabcast
