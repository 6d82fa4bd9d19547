// Geometry of a volume cut into z-slabs, and the index math both halves share.
//
// Slab k owns planes [k*D, min((k+1)*D, NZ)). It also stores `ghost` planes just
// below its first owned plane (none for slab 0). Why: ParaView splits a point
// extent of NZ planes into pieces that share a boundary plane; with NZ = S*D and S
// pieces, piece k covers planes [k*D - 1, (k+1)*D - 1], exactly slab k's stored
// range with one ghost plane. So one rank per slab maps its slab without a copy
// and the rendered volume has no seam.
#pragma once

#include <cstdint>
#include <string>

namespace slabcast {

// The largest size of any axis, and of a slab's depth. Every size read from a
// file or a command line is checked against it before it sizes anything: with
// each axis at most 2^20, a volume holds at most 2^60 values, so every product
// of sizes, planes and 4-byte values below fits a signed 64-bit integer.
constexpr std::int64_t kMaxAxis = std::int64_t{1} << 20;

struct Dims {
    std::int64_t nx = 0, ny = 0, nz = 0;
    std::int64_t plane() const { return nx * ny; }
    std::int64_t count() const { return nx * ny * nz; }
    bool operator==(const Dims& o) const { return nx == o.nx && ny == o.ny && nz == o.nz; }
};

std::string to_string(const Dims& d);  // "64x64x64"
// "" when every size is 1..kMaxAxis and slab_depth is too; otherwise the
// problem, naming the sizes and the range.
std::string volume_problem(const Dims& dims, std::int64_t slab_depth);
// Parses "NX,NY,NZ" (also accepts 'x' as separator); throws std::invalid_argument.
Dims parse_dims(const std::string& text);

struct SlabGeometry {
    int index = 0;
    std::int64_t z_begin = 0;         // first owned plane
    std::int64_t z_end = 0;           // one past the last owned plane
    std::int64_t stored_z_begin = 0;  // first stored plane (ghost planes included)

    std::int64_t owned_planes() const { return z_end - z_begin; }
    std::int64_t stored_planes() const { return z_end - stored_z_begin; }
    std::int64_t ghost_planes() const { return z_begin - stored_z_begin; }
    bool stores_plane(std::int64_t z) const { return z >= stored_z_begin && z < z_end; }
    bool owns_plane(std::int64_t z) const { return z >= z_begin && z < z_end; }
};

int slab_count(const Dims& dims, int slab_depth);

// Throws std::invalid_argument for a slab index outside the volume.
SlabGeometry slab_geometry(const Dims& dims, int slab_depth, int slab_index, int ghost_planes);

// Index of voxel (x,y,z) inside a slab's stored values; the caller has checked bounds.
inline std::int64_t slab_offset(const Dims& dims, const SlabGeometry& slab, std::int64_t x, std::int64_t y,
                                std::int64_t z) {
    return ((z - slab.stored_z_begin) * dims.ny + y) * dims.nx + x;
}

// Index of voxel (x,y,z) in the whole volume (x fastest).
inline std::int64_t volume_offset(const Dims& dims, std::int64_t x, std::int64_t y, std::int64_t z) {
    return (z * dims.ny + y) * dims.nx + x;
}

}  // namespace slabcast
