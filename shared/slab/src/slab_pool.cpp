#include "slabcast/slab_pool.h"

#include "slabcast/confined_path.h"
#include "slabcast/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace slabcast {
namespace {

// The slab must be the one the descriptor describes; a mismatch (a stale file
// left by another run, a hand-edited descriptor) would otherwise show as a
// scrambled volume or an out-of-range read.
void check_against_descriptor(const SlabMapping& m, const Descriptor& d, const std::string& descriptor_path,
                              const SlabEntry& entry) {
    const SlabGeometry want = slab_geometry(d.dims, d.slab_depth, entry.index, d.ghost_planes);
    const SlabGeometry& got = m.geometry();
    std::string problem;
    if (!(m.dims() == d.dims)) {
        problem = "volume " + to_string(m.dims()) + ", descriptor says " + to_string(d.dims);
    } else if (got.index != entry.index || m.slab_depth() != d.slab_depth) {
        problem = "slab " + std::to_string(got.index) + " of depth " + std::to_string(m.slab_depth()) +
                  ", descriptor says slab " + std::to_string(entry.index) + " of depth " +
                  std::to_string(d.slab_depth);
    } else if (got.z_begin != want.z_begin || got.z_end != want.z_end ||
               got.stored_z_begin != want.stored_z_begin) {
        problem = "stores planes " + std::to_string(got.stored_z_begin) + ".." + std::to_string(got.z_end - 1) +
                  ", descriptor implies " + std::to_string(want.stored_z_begin) + ".." +
                  std::to_string(want.z_end - 1);
    } else if (d.field != m.field()) {
        problem = "field '" + m.field() + "', descriptor says '" + d.field + "'";
    }
    if (!problem.empty())
        throw std::runtime_error(m.path() + ": does not match descriptor " + descriptor_path + ": " + problem);
}

struct KeepAlive {
    std::mutex mutex;
    // Several arrays may point at the same address (successive outputs of one
    // unchanged piece), hence a multimap: each release drops one reference.
    std::unordered_multimap<const void*, std::shared_ptr<const void>> owners;
};

KeepAlive& registry() {
    // Never destroyed: arrays may be released during static destruction.
    static KeepAlive* keep_alive = new KeepAlive;
    return *keep_alive;
}

}  // namespace

SlabMappingPtr SlabPool::get(const Descriptor& d, const std::string& descriptor_path, const SlabEntry& entry) {
    const std::string directory = directory_of(descriptor_path);
    const std::string path = directory + "/" + entry.file;
    // Every slab is opened beneath the descriptor's directory, never through a
    // symbolic link (SlabMapping::open_read_only with this directory's fd).
    const UniqueFd dir(::open(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    struct stat st {};
    if (!dir.valid() || ::fstatat(dir.get(), entry.file.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        const std::string why = std::strerror(errno);
        cache_.erase(entry.index);
        throw std::runtime_error(path + ": cannot open slab " + std::to_string(entry.index) + " listed in " +
                                 descriptor_path + ": " + why);
    }
    // The mapping in hand while the name still leads to its file and the file
    // still covers it; else (a receiver that replaced the slab, a file cut
    // short under us) a fresh one, validated anew.
    SlabMappingPtr mapping;
    bool rewritten = false;
    auto it = cache_.find(entry.index);
    if (it != cache_.end() && it->second.file == entry.file &&
        it->second.mapping->device() == static_cast<unsigned long long>(st.st_dev) &&
        it->second.mapping->inode() == static_cast<unsigned long long>(st.st_ino) &&
        it->second.mapping->not_truncated()) {
        // The same file, but maybe no longer the same slab: one rewritten in
        // place (cut to nothing and grown back) reads as a slab that never
        // published a step. Its header is read again each time (one pread,
        // against a frame's milliseconds) and checked as a fresh open checks
        // it, so the file is named rather than shown empty.
        rewritten = !it->second.mapping->header_problem().empty();
        if (!rewritten) mapping = it->second.mapping;
    }
    if (!mapping) {
        cache_.erase(entry.index);
        try {
            mapping = std::make_shared<const SlabMapping>(SlabMapping::open_read_only(dir.get(), entry.file, path));
        } catch (const std::exception& e) {
            if (!rewritten) throw;
            throw std::runtime_error(std::string(e.what()) + " (rewritten in place while the reader had it mapped)");
        }
        cache_[entry.index] = Cached{entry.file, mapping};
    }
    // Also for a mapping kept from before: the descriptor may have changed.
    check_against_descriptor(*mapping, d, descriptor_path, entry);
    return mapping;
}

void retain_for(std::shared_ptr<const void> owner, const void* values) {
    KeepAlive& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.owners.emplace(values, std::move(owner));
}

void retain_mapping_for(const SlabMappingPtr& mapping, const void* values) { retain_for(mapping, values); }

void release_mapping_of(void* values) {
    std::shared_ptr<const void> last;  // unmapped (and unpinned) outside the lock, if this was the last reference
    KeepAlive& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.owners.find(values);
    if (it != r.owners.end()) {
        last = std::move(it->second);
        r.owners.erase(it);
    }
}

std::size_t mappings_held_by_arrays() {
    KeepAlive& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    return r.owners.size();
}

}  // namespace slabcast
