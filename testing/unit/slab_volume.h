// A volume as the receiver leaves it in shared memory, for the reader's tests:
// its slabs written with SlabMapping::create in a private /dev/shm directory,
// and the descriptor listing them. Each stored value says where it lies and
// which slab holds it (value_at), so a test sees both that a value landed in
// the right place and whether it came from the owner or a ghost copy. Each
// slab is written and published as one whole step (step 0), as the receiver
// publishes a step (slabcast/publication.h).
#pragma once

#include "temp_shm_dir.h"

#include "slabcast/descriptor.h"
#include "slabcast/publication.h"
#include "slabcast/slab_file.h"
#include "slabcast/value_range.h"
#include "slabcast/volume.h"

#include <initializer_list>
#include <string>

struct SlabVolume {
    TempShmDir dir;
    slabcast::Descriptor descriptor;
    std::string descriptor_path;

    // The value slab `k` stores at (x, y, z): the voxel's index in the volume,
    // plus 1000 per slab index (the volumes here hold fewer than 1000 values).
    static float value_at(int k, std::int64_t x, std::int64_t y, std::int64_t z, const slabcast::Dims& dims) {
        return static_cast<float>(slabcast::volume_offset(dims, x, y, z) + 1000 * k);
    }

    // `measured`: each publication carries its planes' ranges, as the
    // receiver's do (slab_file.h, BufferRanges); else none, as a writer that
    // measures nothing leaves them.
    SlabVolume(const slabcast::Dims& dims, int slab_depth, std::initializer_list<int> slabs, bool measured = false)
        : measured_(measured) {
        descriptor.name = "v";
        descriptor.dims = dims;
        descriptor.slab_depth = slab_depth;
        descriptor.ghost_planes = 1;
        for (int k : slabs) {
            descriptor.slabs.push_back(slabcast::SlabEntry{k, slabcast::slab_file_name("v", k)});
            write_slab(k, slab_file(k));
        }
        descriptor_path = dir.file("v.slabcast");
        slabcast::write_descriptor(descriptor_path, descriptor);
    }

    std::string slab_file(int k) const { return dir.file(slabcast::slab_file_name("v", k)); }

    // Writes slab `k` (owned and ghost planes) at `path` and publishes it as `step`.
    void write_slab(int k, const std::string& path, float add = 0.f, std::int64_t step = 0) const {
        const slabcast::Dims& dims = descriptor.dims;
        const slabcast::SlabGeometry g =
            slabcast::slab_geometry(dims, descriptor.slab_depth, k, descriptor.ghost_planes);
        auto m = slabcast::SlabMapping::create(path, dims, descriptor.slab_depth, g, descriptor.field);
        const int b = slabcast::take_buffer(m);
        for (std::int64_t z = g.stored_z_begin; z < g.z_end; ++z)
            for (std::int64_t y = 0; y < dims.ny; ++y)
                for (std::int64_t x = 0; x < dims.nx; ++x)
                    m.values_rw(b)[slabcast::slab_offset(dims, g, x, y, z)] = value_at(k, x, y, z, dims) + add;
        const std::uint64_t owned = static_cast<std::uint64_t>(dims.plane()) * static_cast<std::uint64_t>(g.owned_planes());
        slabcast::PublishInfo info{step, owned, owned, 0, true};
        if (measured_) {
            const auto ghost = static_cast<std::size_t>(dims.plane() * g.ghost_planes());
            const slabcast::MinMax o = slabcast::min_max(m.values(b) + ghost, m.value_count() - ghost);
            const slabcast::MinMax h = slabcast::min_max(m.values(b), ghost);
            info.owned_range = slabcast::PartRange{o.lo, o.hi, 0, 0, 1, 0};
            info.ghost_range = slabcast::PartRange{h.lo, h.hi, 0, 0, 1, 0};
        }
        slabcast::publish_buffer(m, b, info);
    }

private:
    bool measured_ = false;
};
