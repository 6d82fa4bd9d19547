// The `.slabcast` descriptor: a small JSON file the receiver writes next to its
// slabs and the ParaView reader opens. It names the volume, its slabs and where
// each slab's shared memory is. See docs/shared-memory.md.
#pragma once

#include "slabcast/volume.h"

#include <string>
#include <vector>

namespace slabcast {

// Version 2: a slab is named by its file name in the descriptor's directory
// (version 1 gave any path, and a reader opened whatever it named).
constexpr int kDescriptorVersion = 2;

// Where a receiver puts its slabs and descriptor unless told otherwise
// (receive --shm-dir, clean --shm-dir): shared memory, for the renderer to map
// without a copy (Balman et al., 2012, section 4.2).
inline constexpr const char* kDefaultShmDir = "/dev/shm/slabcast";

// DIR/NAME.slabcast: the descriptor of volume NAME, next to its slabs.
std::string descriptor_path(const std::string& dir, const std::string& name);

struct SlabEntry {
    int index = 0;
    std::string file;  // a plain file name in the descriptor's directory (is_plain_name)
};

struct Descriptor {
    std::string name;
    std::string field = "density";
    Dims dims;
    int slab_depth = 0;
    int ghost_planes = 1;
    double origin[3] = {0, 0, 0};
    double spacing[3] = {1, 1, 1};
    std::vector<SlabEntry> slabs;  // the slabs this host holds, any subset
};

// Throws std::runtime_error("<path>: <problem>") for a missing, unreadable,
// malformed or wrong-version descriptor, sizes beyond kMaxAxis, or a slab file
// that is not a plain name in the descriptor's directory.
Descriptor read_descriptor(const std::string& path);
Descriptor parse_descriptor(const std::string& text, const std::string& path_for_errors);
std::string descriptor_to_json(const Descriptor& d);
// Writes atomically (temporary file + rename) so a reader never sees half a file.
void write_descriptor(const std::string& path, const Descriptor& d);

}  // namespace slabcast
