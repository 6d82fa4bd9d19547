// What `slabcast demo` reads back from its roles' logs while it runs: each
// role writes text lines, and JSON lines under --stats-json.
#pragma once

#include <cstddef>
#include <string>

namespace slabcast {

// The last line of the file at PATH that contains CONTAINING; empty if none
// (or no file yet).
std::string last_line(const std::string& path, const std::string& containing);

// How many of a receiver's streams have logged a step's outcome (a "step" or
// "step_dropped" event) in its --stats-json file at PATH.
std::size_t streams_reporting_a_step(const std::string& path);

}  // namespace slabcast
