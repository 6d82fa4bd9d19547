// Who pins a slab's buffers, as the kernel records it: each reader's OFD read
// locks on the slab's pin bytes (slab_file.h), listed per open file in
// /proc/<pid>/fdinfo. The receiver asks the kernel only whether a buffer is
// pinned (F_OFD_GETLK names no process); this names the processes, for the
// warning a receiver gives when its readers leave it one buffer, and for the
// stream monitor. Processes of other users are not readable, and not listed.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace slabcast {

class SlabMapping;

struct ReaderPins {
    int pid = 0;
    std::string command;       // /proc/<pid>/comm
    std::vector<int> buffers;  // pinned, ascending, each once
};

// By slab path (as given): every process that pins a buffer of that file,
// ascending pid. One pass over /proc for all of them.
std::map<std::string, std::vector<ReaderPins>> readers_pinning(const std::vector<std::string>& slab_paths);

// "pvbatch[1234] 2 (steps 17, 18), pvpython[99] 1 (step 16)": each reader's
// pins, with the step of each buffer from `step_of` (-1: being written or
// never published, left out).
std::string readers_text(const std::vector<ReaderPins>& readers, const std::vector<long long>& step_of);

// For each slab, by its path: readers_text of who pins its buffers now, each
// buffer's step read from its publication.
std::map<std::string, std::string> readers_of(const std::vector<const SlabMapping*>& slabs);

// Parses one "lock:" line of an fdinfo file: the buffers it pins (pin b is
// a read lock on byte kPinLockOffset + b; the kernel shows neighbouring
// pins of one open file as one range), none when it is no pin.
std::vector<int> pinned_buffers_of(const std::string& fdinfo_lock_line);

}  // namespace slabcast
