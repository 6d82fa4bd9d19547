// The status thread's look at the buffers readers pin. A step begins in a
// buffer no reader pins; with every buffer pinned it is dropped
// (docs/shared-memory.md, "Buffers and publication"). When a slab's readers
// held all its buffers but one as a step began, the next pin drops a step:
// the receiver says so before it happens, naming the readers and what each
// holds, and names them again when steps were dropped.
#pragma once

#include "base/status_reporter.h"
#include "receive/receive_stream.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace slabcast {

class PinWatch {
public:
    explicit PinWatch(int buffers) : buffers_(buffers) {}
    // Once a second, from the status thread (a pass over /proc only when
    // there is something to say).
    void look(const std::vector<std::unique_ptr<Stream>>& streams, StatusReporter& status);

private:
    int buffers_;
    std::map<int, std::uint32_t> warned_peak_;  // by stream: the pinned_peak last warned of
    std::map<int, std::uint64_t> dropped_seen_;  // by stream: dropped_steps at the last look
};

}  // namespace slabcast
