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

// The slabs of this host's descriptor, and which of them stores a plane.
class HostPlanes {
public:
    HostPlanes(const Descriptor& d, const std::string& descriptor_path) : d_(d), path_(descriptor_path) {
        for (const auto& e : d.slabs) listed_.insert(e.index);
    }

    // Plane z's source on this host; false when no slab here stores it.
    bool find(int z, PlaneSource& out) const {
        const int owner = z / d_.slab_depth;
        if (listed_.count(owner)) {
            out = PlaneSource{owner, false, z};
            return true;
        }
        if (owner + 1 < slab_count(d_.dims, d_.slab_depth) && listed_.count(owner + 1) &&
            geometry(owner + 1).stores_plane(z)) {
            // The owner lives on another host; the next slab's ghost copy is the same plane.
            out = PlaneSource{owner + 1, true, z};
            return true;
        }
        return false;
    }

    [[noreturn]] void missing(int z) const {
        const int owner = z / d_.slab_depth;
        const SlabGeometry g = geometry(owner);
        throw std::runtime_error(path_ + ": slab " + std::to_string(owner) + " (planes " + std::to_string(g.z_begin) +
                                 ".." + std::to_string(g.z_end - 1) +
                                 ") is not in this host's shared memory, but plane " + std::to_string(z) +
                                 " of the requested extent needs it; the descriptor lists slabs " +
                                 list_text(listed_) + "; expected file " +
                                 slab_file_path(directory_of(path_), d_.name, owner));
    }

    bool listed(int k) const { return listed_.count(k) != 0; }
    SlabGeometry geometry(int k) const { return slab_geometry(d_.dims, d_.slab_depth, k, d_.ghost_planes); }

private:
    const Descriptor& d_;
    const std::string& path_;
    std::set<int> listed_;
};

}  // namespace

SlabSelection select_slabs(const Descriptor& d, const std::string& descriptor_path, const int extent[6]) {
    const HostPlanes here(d, descriptor_path);
    const int z0 = extent[4], z1 = extent[5];
    SlabSelection s;
    const int top = z1 / d.slab_depth;
    if (extent[0] == 0 && extent[1] == d.dims.nx - 1 && extent[2] == 0 && extent[3] == d.dims.ny - 1 &&
        here.listed(top) && here.geometry(top).stored_z_begin <= z0) {
        s.zero_copy_slab = top;
    }
    for (int z = z0; z <= z1; ++z) {
        PlaneSource p;
        if (!here.find(z, p)) here.missing(z);
        s.planes.push_back(p);
    }
    return s;
}

SlabSelection select_strided_slabs(const Descriptor& d, const std::string& descriptor_path, const int extent[6],
                                   int stride) {
    const HostPlanes here(d, descriptor_path);
    SlabSelection s;
    for (int zc = extent[4]; zc <= extent[5]; ++zc) {
        const int want = zc * stride;
        PlaneSource p;
        bool found = false;
        for (int off = 0; off < stride && !found; ++off)  // nearest first, the plane itself before all
            for (const int z : {want + off, want - off})
                if (!found && z >= 0 && z < d.dims.nz) found = here.find(z, p);
        if (!found) here.missing(want);
        s.planes.push_back(p);
    }
    return s;
}

}  // namespace slabcast
