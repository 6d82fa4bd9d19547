#include "setup/render_launch.h"

#include "slabcast/descriptor.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace slabcast {
namespace {

const char* const kHeader =
    "# render (start after the receivers): one pvbatch rank a slab, rank k on the host receiving slab k\n";

std::string shm_dir_of(const PlanHost& r) { return r.shm_dir.empty() ? kDefaultShmDir : r.shm_dir; }

}  // namespace

std::string render_launch(const PlanVolume& v, const InstallLayout& layout) {
    std::vector<PlanHost> hosts;
    for (PlanHost h : v.receivers)
        if (!h.streams.empty()) {  // read_deployment lets none through empty; a rank needs one
            std::sort(h.streams.begin(), h.streams.end());
            hosts.push_back(h);
        }
    if (hosts.empty()) return "";
    std::sort(hosts.begin(), hosts.end(), [](const PlanHost& a, const PlanHost& b) { return a.streams[0] < b.streams[0]; });
    std::vector<std::string> slots;
    std::size_t ranks = 0;
    for (const PlanHost& h : hosts) {
        // Ranks go to hosts in order, a run each: a host's slabs must be consecutive.
        if (h.streams.back() - h.streams.front() + 1 != static_cast<int>(h.streams.size()))
            return fmt::format("{}# no such launch: receiver {} takes streams {}, not one run of consecutive streams\n",
                               kHeader, h.name, h.streams_text);
        if (shm_dir_of(h) != shm_dir_of(hosts[0]))
            return fmt::format("{}# no such launch: receivers {} and {} keep their slabs in different shm_dirs, "
                               "and every rank opens the same descriptor path\n",
                               kHeader, hosts[0].name, h.name);
        slots.push_back(fmt::format("{}:{}", h.name, h.streams.size()));
        ranks += h.streams.size();
    }
    return fmt::format("{}mpirun --host {} -np {} --map-by slot -x PV_PLUGIN_PATH={} pvbatch --force-offscreen-rendering "
                       "{}/slabcast_render.py {}/{}.slabcast\n",
                       kHeader, fmt::join(slots, ","), ranks, layout.plugin_dir, layout.script_dir,
                       shm_dir_of(hosts[0]), v.name);
}

}  // namespace slabcast
