// A step file in the staging area, mapped read-only by a shuffler, and the
// "done" markers by which shufflers tell the stager a staged step is free.
#pragma once

#include "slabcast/mapped_region.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace slabcast {

class StagedStep {
public:
    StagedStep() = default;  // move-only, through its mapping; a moved-from step is not valid()

    // Maps `path`; returns an empty StagedStep and sets `problem` when it is
    // missing or not `expected_bytes` long.
    static StagedStep open(const std::string& path, std::uint64_t expected_bytes, std::string& problem);
    const float* values() const { return reinterpret_cast<const float*>(region_.base()); }
    // Maps the pages of [offset, offset+length) now, in one call: faulting them
    // one by one while sending costs more CPU than building the packets.
    void prefault(std::size_t offset, std::size_t length) const;
    bool valid() const { return region_.valid(); }

private:
    MappedRegion region_;
};

// "<staging>/<location>.done.<stream>": written by shuffler `stream` when it has
// finished or abandoned the staged step `location`.
std::string done_marker_path(const std::string& staging, const std::string& location, int stream);
void write_done_marker(const std::string& staging, const std::string& location, int stream);

}  // namespace slabcast
