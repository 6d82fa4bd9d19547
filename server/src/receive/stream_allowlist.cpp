#include "receive/stream_allowlist.h"

#include "slabcast/units.h"
#include "slabcast/volume.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace slabcast {

void apply_allowlist(const std::vector<std::string>& items, const std::map<int, Stream*>& by_slab) {
    for (const std::string& item : items) {
        const auto eq = item.find('=');
        if (eq == std::string::npos) {
            for (auto& [slab, s] : by_slab) s->allowed.add_list(item);
            continue;
        }
        const int slab = parse_index_list(item.substr(0, eq), kMaxAxis - 1, "--allow stream")[0];
        if (!by_slab.count(slab)) throw std::invalid_argument("--allow '" + item + "': no --stream for slab " +
                                                              std::to_string(slab));
        by_slab.at(slab)->allowed.add_list(item.substr(eq + 1));
    }
    for (auto& [slab, s] : by_slab)
        if (s->allowed.empty())
            spdlog::warn("stream {}: no --allow list: any host that can reach the port can write into the slab", slab);
        else
            spdlog::info("stream {}: accepting packets from {}", slab, s->allowed.to_string());
}

}  // namespace slabcast
