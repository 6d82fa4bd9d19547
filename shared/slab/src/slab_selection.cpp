#include "slabcast/slab_selection.h"

#include "slabcast/confined_path.h"
#include "slabcast/slab_file.h"
#include "slabcast/volume.h"

#include <set>
#include <stdexcept>

namespace slabcast {
namespace {

std::string list_text(const std::set<int>& listed) {
    if (listed.empty()) return "none";
    std::string s;
    for (int k : listed) s += (s.empty() ? "" : ",") + std::to_string(k);
    return s;
}

}  // namespace

SlabSelection select_slabs(const Descriptor& d, const std::string& descriptor_path, const int extent[6]) {
    std::set<int> listed;
    for (const auto& e : d.slabs) listed.insert(e.index);
    const int depth = d.slab_depth;
    const int z0 = extent[4], z1 = extent[5];
    auto geometry = [&](int k) { return slab_geometry(d.dims, depth, k, d.ghost_planes); };

    SlabSelection s;
    const int top = z1 / depth;
    if (extent[0] == 0 && extent[1] == d.dims.nx - 1 && extent[2] == 0 && extent[3] == d.dims.ny - 1 &&
        listed.count(top) && geometry(top).stored_z_begin <= z0) {
        s.zero_copy_slab = top;
    }

    const int count = slab_count(d.dims, depth);
    for (int z = z0; z <= z1; ++z) {
        const int owner = z / depth;
        if (listed.count(owner)) {
            s.planes.push_back(PlaneSource{owner, false});
        } else if (owner + 1 < count && listed.count(owner + 1) && geometry(owner + 1).stores_plane(z)) {
            // The owner lives on another host; the next slab's ghost copy is the same plane.
            s.planes.push_back(PlaneSource{owner + 1, true});
        } else {
            const SlabGeometry g = geometry(owner);
            throw std::runtime_error(descriptor_path + ": slab " + std::to_string(owner) + " (planes " +
                                     std::to_string(g.z_begin) + ".." + std::to_string(g.z_end - 1) +
                                     ") is not in this host's shared memory, but plane " + std::to_string(z) +
                                     " of the requested extent needs it; the descriptor lists slabs " +
                                     list_text(listed) + "; expected file " +
                                     slab_file_path(directory_of(descriptor_path), d.name, owner));
        }
    }
    return s;
}

}  // namespace slabcast
