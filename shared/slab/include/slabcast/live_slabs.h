// What the slabs behind a reader's output say now, read with pread and stat,
// never through their mappings: a file cut short under a mapping makes a read
// of its pages a SIGBUS, and these run while nothing else happens (the live
// poll) or after the values were handed out.
#pragma once

#include "slabcast/slab_pool.h"

#include <cstdint>
#include <string>
#include <vector>

namespace slabcast {

// The header of each slab in `used`, in the same order. Throws
// std::runtime_error "<slab>: truncated under the reader" for a file that no
// longer holds a whole header.
std::vector<SlabHeader> read_slab_headers(const std::vector<SlabMappingPtr>& used);

// What a live reader follows: publications (whole steps: a new frame exists
// when a slab published a step), or every write (newest data: the step being
// written fills in).
enum class LiveFollow { Publications, Writes };

// A digest of the descriptor file's identity and of each used slab's
// counters and identity: a publication (or, following writes, any batch of
// packets placed), a receiver that rewrites the descriptor (restart, new
// slabs), a slab replaced under its name or cut short all change it. A reader
// re-executes when it differs from the one taken at its last execution.
std::uint64_t live_signature(const std::string& descriptor_path, const std::vector<SlabMappingPtr>& used,
                             LiveFollow follow = LiveFollow::Publications);

}  // namespace slabcast
