// libFuzzer harness: the `.slabcast` descriptor parser, which the ParaView
// reader runs on a file anyone who can write the shm directory may have
// written. It must either throw std::runtime_error or return a descriptor
// that is consistent, within the size caps, names every slab by a plain file
// name that stays in the descriptor's directory, and writes back to an equal
// one.
#include "slabcast/descriptor.h"

#include <stdexcept>
#include <string>

using namespace slabcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Descriptor d;
    try {
        d = parse_descriptor(text, "fuzz.slabcast");
    } catch (const std::runtime_error&) {
        return 0;
    }
    if (!volume_problem(d.dims, d.slab_depth).empty() || d.ghost_planes < 0 || d.ghost_planes > d.slab_depth)
        __builtin_trap();
    for (const auto& s : d.slabs) {
        if (s.index < 0 || static_cast<long long>(s.index) * d.slab_depth >= d.dims.nz) __builtin_trap();
        // Path confinement, judged here on its own: one non-empty component,
        // neither "." nor "..", no NUL.
        if (s.file.empty() || s.file.find('/') != std::string::npos || s.file == "." || s.file == ".." ||
            s.file.find('\0') != std::string::npos)
            __builtin_trap();
    }
    const Descriptor back = parse_descriptor(descriptor_to_json(d), "again.slabcast");
    if (back.slabs.size() != d.slabs.size() || !(back.dims == d.dims)) __builtin_trap();
    return 0;
}
