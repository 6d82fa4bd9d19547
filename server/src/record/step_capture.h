// A published step of every slab of a volume, copied out of shared memory
// into memory of the recorder's own: the copy is what holds the receiver's
// buffers pinned, for a memcpy's time, never for a disk write's (the receiver
// never waits for a reader, docs/shared-memory.md).
#pragma once

#include "record/recording_ring.h"

#include "slabcast/step_choice.h"

#include <cstdint>
#include <memory>

namespace slabcast {

class StepCapture {
public:
    // Room for a whole volume of `dims`, allocated and touched now, so that no
    // step pays for first-touch page faults.
    explicit StepCapture(const Dims& dims);

    // Copies each slab's owned planes of `choice` (a whole step of every slab
    // of the volume, pinned) and sums their publications into the report.
    // `started_ns`: when the receivers began the step (0: not seen).
    void take(const StepChoice& choice, std::int64_t started_ns);
    StepToRecord step() const;

private:
    Dims dims_;
    std::unique_ptr<float[]> values_;
    std::unique_ptr<std::uint8_t[]> ages_;
    int number_ = 0;
    RecordedStep report_;
};

}  // namespace slabcast
