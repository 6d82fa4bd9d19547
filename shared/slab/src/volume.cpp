#include "slabcast/volume.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace slabcast {

std::string to_string(const Dims& d) {
    return std::to_string(d.nx) + "x" + std::to_string(d.ny) + "x" + std::to_string(d.nz);
}

std::string volume_problem(const Dims& dims, std::int64_t slab_depth) {
    const auto fits = [](std::int64_t v) { return v >= 1 && v <= kMaxAxis; };
    if (!fits(dims.nx) || !fits(dims.ny) || !fits(dims.nz))
        return "dims " + to_string(dims) + ": each size must be 1.." + std::to_string(kMaxAxis);
    if (!fits(slab_depth))
        return "slab depth " + std::to_string(slab_depth) + " must be 1.." + std::to_string(kMaxAxis);
    return {};
}

Dims parse_dims(const std::string& text) {
    std::int64_t v[3];
    std::size_t pos = 0;
    for (int i = 0; i < 3; ++i) {
        std::size_t used = 0;
        try {
            v[i] = std::stoll(text.substr(pos), &used);
        } catch (const std::exception&) {
            throw std::invalid_argument("dims '" + text + "': expected NX,NY,NZ");
        }
        pos += used;
        if (i < 2) {
            if (pos >= text.size() || (text[pos] != ',' && text[pos] != 'x'))
                throw std::invalid_argument("dims '" + text + "': expected NX,NY,NZ");
            ++pos;
        }
        if (v[i] < 1 || v[i] > kMaxAxis)
            throw std::invalid_argument("dims '" + text + "': each size must be 1.." + std::to_string(kMaxAxis));
    }
    if (pos != text.size()) throw std::invalid_argument("dims '" + text + "': trailing characters");
    return Dims{v[0], v[1], v[2]};
}

int slab_count(const Dims& dims, int slab_depth) {
    // The one guard every slab computation passes: nothing below can overflow.
    if (const std::string problem = volume_problem(dims, slab_depth); !problem.empty())
        throw std::invalid_argument(problem);
    return static_cast<int>((dims.nz + slab_depth - 1) / slab_depth);
}

SlabGeometry slab_geometry(const Dims& dims, int slab_depth, int slab_index, int ghost_planes) {
    const int count = slab_count(dims, slab_depth);
    if (slab_index < 0 || slab_index >= count)
        throw std::invalid_argument("slab " + std::to_string(slab_index) + " is outside 0.." +
                                    std::to_string(count - 1) + " for dims " + to_string(dims) +
                                    " and slab depth " + std::to_string(slab_depth));
    if (ghost_planes < 0) throw std::invalid_argument("ghost planes must be >= 0");
    SlabGeometry g;
    g.index = slab_index;
    g.z_begin = static_cast<std::int64_t>(slab_index) * slab_depth;
    g.z_end = std::min<std::int64_t>(g.z_begin + slab_depth, dims.nz);
    g.stored_z_begin = std::max<std::int64_t>(0, g.z_begin - ghost_planes);
    return g;
}

}  // namespace slabcast
