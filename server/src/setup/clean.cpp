// `slabcast clean`: removes a volume's shared memory (slabs and descriptor),
// which `receive` deliberately leaves behind for readers.
#include "base/roles.h"

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace slabcast {
namespace {

struct CleanOptions {
    std::string name;
    std::string shm_dir = kDefaultShmDir;
};

int run_clean(const CleanOptions& o) {
    if (o.name.empty() || o.name.find('/') != std::string::npos)
        throw std::invalid_argument("--name '" + o.name + "' must be a plain name");
    std::set<std::string> doomed;
    const std::string descriptor = descriptor_path(o.shm_dir, o.name);
    try {
        // Plain names in the directory (read_descriptor refuses any other):
        // a descriptor cannot make clean remove a file elsewhere.
        for (const auto& s : read_descriptor(descriptor).slabs) doomed.insert(o.shm_dir + "/" + s.file);
    } catch (const std::exception& e) {
        spdlog::debug("{}", e.what());
    }
    // Also slabs that no descriptor lists any more (NAME.slab<k>).
    if (DIR* dir = ::opendir(o.shm_dir.c_str())) {
        const std::string prefix = o.name + ".slab";
        while (dirent* e = ::readdir(dir)) {
            const std::string n = e->d_name;
            if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() &&
                n.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
                doomed.insert(o.shm_dir + "/" + n);
            // A replacement slab a killed receiver left half made (.NAME.slab<k>.new-PID).
            if (n.rfind("." + prefix, 0) == 0 && n.find(".new-") != std::string::npos) doomed.insert(o.shm_dir + "/" + n);
        }
        ::closedir(dir);
    }
    doomed.insert(descriptor);
    int removed = 0;
    for (const auto& path : doomed) {
        if (::unlink(path.c_str()) == 0) ++removed;
        else if (errno != ENOENT) spdlog::warn("cannot remove {}: {}", path, std::strerror(errno));
    }
    spdlog::info("clean: removed {} file(s) of '{}' from {}", removed, o.name, o.shm_dir);
    return 0;
}

}  // namespace

void register_clean(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<CleanOptions>();
    CLI::App* c = root.add_subcommand("clean", "remove a volume's shared-memory slabs and descriptor");
    c->add_option("--name", o->name, "name given to receive")->required();
    c->add_option("--shm-dir", o->shm_dir, "directory given to receive")->capture_default_str();
    c->callback([o, &run] { run = [o] { return run_clean(*o); }; });
}

}  // namespace slabcast
