// The receiver's side of the shared-memory directory (Balman et al., 2012,
// section 4.2: slabs in /dev/shm the renderer maps read-only; docs/shared-memory.md):
// room for its slabs before it writes them, one descriptor shared with the
// other receivers of the same volume on this host, and its own files gone on a
// clean stop. The volume is described by a Descriptor: name, field, dims,
// slab depth, ghost planes and this receiver's slabs.
#pragma once

#include "slabcast/descriptor.h"

#include <string>

namespace slabcast {

// Throws std::runtime_error("DIR has X free, the slabs (...) need Y") when the
// slabs of `mine` that are not already there, of this very shape, do not fit
// in `dir` with `buffers` value buffers each: pre-faulting a slab in a full
// tmpfs ended the receiver in SIGBUS.
void require_room_for_slabs(const std::string& dir, const Descriptor& mine, int buffers);

// Adds to `mine` the slabs another receiver process on this host listed in
// the descriptor at `path` (same volume, files still there), so several
// daemons can share one NAME.slabcast.
void merge_existing(const std::string& dir, const std::string& path, Descriptor& mine);

// On a clean stop: the slab files of `mine` go, and their entries leave the
// descriptor at `path` (which goes too when no other receiver's slabs are
// left in it). A renderer that has them mapped keeps its mapping until it
// lets go.
void remove_own_slabs(const std::string& dir, const std::string& path, const Descriptor& mine);

}  // namespace slabcast
