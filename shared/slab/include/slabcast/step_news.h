// Whether a live view's step is still the newest: the reader says which step
// each of its outputs shows and from which slabs, and the plugin's CPU mapper
// asks while it draws that output. Once every slab holds a newer step the
// frame is stopped, and the new step is drawn coarse at once instead of
// after the old one's finer frames: what a viewer waits for is the time from
// send to picture (Balman et al., 2012, section 4).
#pragma once

#include "slabcast/slab_pool.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace slabcast {

class StepNews {
public:
    // The process's one registry: the reader and the mapper share it (both
    // are compiled into the one plugin library).
    static StepNews& instance();

    // A key of its own for a reader's output (never 0).
    std::uint64_t new_key();
    // What output `key` shows of each slab it reads: the publication (its
    // number, slabcast/publication.h). None: nothing to watch (a step back
    // in history, data being written, a paused reader).
    struct Shown {
        SlabMappingPtr slab;
        std::uint64_t publication = 0;
    };
    void shows(std::uint64_t key, std::vector<Shown> shown);
    void forget(std::uint64_t key);
    // True when every slab behind output `key` has published since what the
    // output shows of it (by publication number: a stream that starts its
    // steps again from 0 moves on too). Reads each slab's header with one
    // pread, never its mapping; allocates nothing.
    bool newer(std::uint64_t key) const;

private:
    mutable std::mutex mutex_;
    std::map<std::uint64_t, std::vector<Shown>> watches_;
    std::uint64_t next_key_ = 1;
};

}  // namespace slabcast
