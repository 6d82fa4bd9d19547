// `slabcast record`: beside a live receiver, every published step of a volume
// written to a recording (record/recording_ring.h). The recorder is a reader
// like ParaView's: it pins the newest whole step under the same protocol,
// copies it out (record/step_capture.h) and lets go; a thread of its own
// compresses and writes. When both copies are still waiting for the disk a
// new step is skipped and counted, so the receiver never waits for the disk;
// and it runs at the lowest CPU priority by default, so that on a core it
// shares with the data path (a shuffler, a receiver) it takes only what they
// leave.
#pragma once

#include "slabcast/step_file.h"

#include <cstdint>
#include <string>

namespace slabcast {

struct RecordOptions {
    std::string descriptor;  // the receiver's .slabcast
    std::string out;         // the recording's directory
    std::string codec = "lz4";
    std::string budget;      // "" or 0: keep every step
    std::uint64_t steps = 0; // stop after this many recorded (0: until stopped)
    double wait_s = 30;      // for the descriptor to appear
    int copies = 2;          // steps in memory: one being written, one waiting
    int nice = 19;           // CPU priority below the data path's (0..19)
    std::string stats_json;
};

int run_record(const RecordOptions& o);

}  // namespace slabcast
