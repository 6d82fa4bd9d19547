#include "receive/slab_directory.h"

#include "base/host_checks.h"

#include "slabcast/slab_file.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace slabcast {
namespace {

bool lists(const Descriptor& d, int index) {
    return std::any_of(d.slabs.begin(), d.slabs.end(), [&](const SlabEntry& e) { return e.index == index; });
}

}  // namespace

// (Sizes are within kMaxAxis, checked by parse_dims: no sum below can wrap.)
void require_room_for_slabs(const std::string& dir, const Descriptor& mine, int buffers) {
    std::uint64_t need = 0;
    for (const SlabEntry& e : mine.slabs) {
        const SlabGeometry g = slab_geometry(mine.dims, mine.slab_depth, e.index, mine.ghost_planes);
        SlabLayout layout;
        slab_layout(static_cast<std::uint64_t>(mine.dims.plane()) * static_cast<std::uint64_t>(g.stored_planes()),
                    buffers, layout);
        const std::uint64_t bytes = layout.file_bytes;
        // A slab of this very shape already there (a restart re-attaches to it)
        // holds the pages it has. One of another shape is replaced by a new
        // file, and its pages stay taken while a renderer maps it.
        struct stat st {};
        const std::string path = slab_file_path(dir, mine.name, e.index);
        const bool held =
            slab_file_matches(path, mine.dims, mine.slab_depth, g, mine.field, buffers) && ::stat(path.c_str(), &st) == 0;
        const std::uint64_t allocated = held ? static_cast<std::uint64_t>(st.st_blocks) * 512 : 0;
        need += bytes - std::min(bytes, allocated);
    }
    require_free_space(dir, need,
                       fmt::format("the slabs ({} of {}, depth {}, {} buffers)", mine.slabs.size(),
                                   to_string(mine.dims), mine.slab_depth, buffers));
}

void merge_existing(const std::string& dir, const std::string& path, Descriptor& mine) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;
    try {
        const Descriptor old = read_descriptor(path);
        if (!(old.dims == mine.dims) || old.slab_depth != mine.slab_depth || old.ghost_planes != mine.ghost_planes ||
            old.field != mine.field)
            return;
        for (const auto& e : old.slabs)
            if (!lists(mine, e.index) && ::access((dir + "/" + e.file).c_str(), R_OK) == 0) mine.slabs.push_back(e);
    } catch (const std::exception& e) {
        spdlog::warn("replacing unreadable descriptor: {}", e.what());
    }
}

void remove_own_slabs(const std::string& dir, const std::string& path, const Descriptor& mine) {
    for (const SlabEntry& e : mine.slabs) ::unlink(slab_file_path(dir, mine.name, e.index).c_str());
    try {
        Descriptor d = read_descriptor(path);
        std::vector<SlabEntry> others;
        for (const auto& e : d.slabs)
            if (!lists(mine, e.index) && ::access((dir + "/" + e.file).c_str(), R_OK) == 0) others.push_back(e);
        d.slabs = others;
        if (others.empty()) ::unlink(path.c_str());
        else write_descriptor(path, d);
    } catch (const std::exception& e) {
        spdlog::warn("receive: {}", e.what());
    }
    ::rmdir(dir.c_str());  // only if nothing else is in it
    spdlog::info("receive: stopped; removed its slabs from {} (--keep leaves them for readers)", dir);
}

}  // namespace slabcast
