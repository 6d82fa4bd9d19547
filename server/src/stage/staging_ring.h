// The stager's staging slots: step-sized files in the staging directory that
// it creates (every page reserved, so touched once) the first time its window
// needs them and then reuses step after step. A staged step is a second name,
// a hard link, for the slot that holds it: shufflers find steps by name, as
// the sync packet gives it (Balman et al., 2012, section 4.2), and map each
// slot once. Memory created, first touched and freed for every step costs
// more than the network on a virtual machine (docs/performance.md, "Run and quad packets").
//
// A slot is rewritten only under an exclusive flock(2), which a shuffler's
// shared lock on the slot, held while it sends a step from it, keeps off: a
// shuffler never sends one step's name with another's values.
#pragma once

#include "slabcast/unique_fd.h"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slabcast {

// What a source file was when it was staged: a slot that still holds it is
// staged again without a copy while the file is unchanged.
struct SourceStamp {
    dev_t device = 0;
    ino_t inode = 0;
    std::uint64_t bytes = 0;
    std::int64_t modified_ns = 0;
    bool operator==(const SourceStamp& o) const {
        return device == o.device && inode == o.inode && bytes == o.bytes && modified_ns == o.modified_ns;
    }
};
// Throws std::runtime_error naming the file when it cannot be read.
SourceStamp stamp_of(const std::string& path);

// Takes the staging directory for this process, for as long as it holds the
// returned descriptor (a second stager on it is refused: it would rewrite
// slots under the first one's names), and removes the slots a stager that did
// not stop cleanly left. Throws std::runtime_error naming the problem.
UniqueFd take_staging_directory(const std::string& staging);

class StagingRing {
public:
    // `directory`: from take_staging_directory. `most_slots`: the staging window.
    StagingRing(UniqueFd directory, const std::string& staging, std::uint64_t slot_bytes, long most_slots);
    ~StagingRing();  // removes the slots (the staged names are the stager's to remove first)
    StagingRing(const StagingRing&) = delete;
    StagingRing& operator=(const StagingRing&) = delete;

    struct Claim {
        int slot = -1;
        bool holds_step = false;  // it already holds the step: publish it without a copy
    };
    // A slot for staging `file` (whose source is `source`): one that still
    // holds it, else a new one while fewer than `most_slots` exist, else the
    // free slot staged longest ago that no shuffler is reading. Empty when
    // every slot is published or being read. Throws std::runtime_error when a
    // new slot cannot be reserved (a full tmpfs), naming the space.
    std::optional<Claim> claim(const std::string& file, const SourceStamp& source);
    // The descriptor to copy a claimed slot's step into (from offset 0).
    int fd(int slot) const { return slots_[static_cast<std::size_t>(slot)].fd.get(); }
    // The step is in the claimed slot: it appears under its name.
    void publish(int slot, const std::string& file, const SourceStamp& source);
    // The claimed slot holds nothing whole (the copy failed or was dropped).
    void abandon(int slot);
    // The step's name goes; the slot keeps its values for a later lap.
    void unpublish(int slot);

    std::size_t slots() const { return slots_.size(); }

private:
    struct Slot {
        std::string path;
        UniqueFd fd;
        std::string file;          // the step it holds ("" : nothing whole)
        SourceStamp source;
        bool published = false;    // `file` names it in the staging directory
        bool claimed = false;      // being written (exclusively locked)
        std::uint64_t last_used = 0;
    };
    int create_slot();
    std::string step_path(const std::string& file) const { return staging_ + "/" + file; }

    std::string staging_;
    std::uint64_t slot_bytes_;
    long most_slots_;
    UniqueFd directory_;  // take_staging_directory's: this stager's for as long as it runs
    std::vector<Slot> slots_;
    std::uint64_t uses_ = 0;
};

}  // namespace slabcast
