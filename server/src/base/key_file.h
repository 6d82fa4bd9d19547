// The shared key that authenticates sync packets and the data mover's streams
// (mover/auth.h): 32 random bytes kept as 64 hex characters in a file only its
// owner may read (`slabcast keygen PATH`).
#pragma once

#include "slabcast/control_packets.h"

#include <string>

namespace slabcast {

// Throws std::runtime_error naming the file and the fix: missing, readable by
// group or others, or not 64 hexadecimal characters.
control::SyncKey load_sync_key(const std::string& path);
// Writes a fresh random key, mode 0600; refuses to overwrite an existing file.
void write_new_key(const std::string& path);

}  // namespace slabcast
