#include "slabcast/live_slabs.h"

#include <sys/stat.h>

#include <algorithm>
#include <stdexcept>

namespace slabcast {

std::vector<SlabHeader> read_slab_headers(const std::vector<SlabMappingPtr>& used) {
    std::vector<SlabHeader> headers(used.size());
    for (std::size_t i = 0; i < used.size(); ++i) {
        if (!used[i]->read_header(headers[i]))
            throw std::runtime_error(used[i]->path() + ": truncated under the reader (the file shrank)");
    }
    return headers;
}

std::uint64_t live_signature(const std::string& descriptor_path, const std::vector<SlabMappingPtr>& used,
                             LiveFollow follow) {
    std::uint64_t h = 1469598103934665603ULL;
    auto mix = [&h](std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    struct stat st {};
    if (!descriptor_path.empty() && ::stat(descriptor_path.c_str(), &st) == 0) {
        mix(static_cast<std::uint64_t>(st.st_ino));
        mix(static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000ULL +
            static_cast<std::uint64_t>(st.st_mtim.tv_nsec));
    } else {
        mix(0xdeadULL);  // "no descriptor" is a state of its own
    }
    for (const auto& m : used) {
        SlabHeader header{};
        if (!m->read_header(header)) {
            mix(0xc07ULL);  // cut below its header
        } else if (follow == LiveFollow::Publications) {
            mix(header.live.publications.load(std::memory_order_acquire));
        } else {
            mix(header.live.generation.load(std::memory_order_acquire));
            mix(header.live.writes.load(std::memory_order_acquire));
        }
        mix(m->not_truncated() ? 1 : 2);
        mix(::stat(m->path().c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0);
    }
    return h;
}

}  // namespace slabcast
