// A rank's extent across several slabs, without a copy: the slabs' planes of
// the buffer shown mapped back to back (slabcast/stitched_planes.h), read
// value by value against what each slab stores, ghost planes included; and
// where a plane is not whole pages, or the extent not whole planes, nothing
// (the reader copies).
#include "slab_volume.h"

#include "slabcast/extent_values.h"
#include "slabcast/slab_selection.h"
#include "slabcast/step_choice.h"
#include "slabcast/stitched_planes.h"

#include <catch2/catch.hpp>

#include <unistd.h>

using namespace slabcast;

namespace {

std::shared_ptr<const StitchedPlanes> stitch(const SlabVolume& v, const Dims& dims, const int extent[6],
                                            StitchedPlanes::Kind kind, SlabPool& pool, StitchCache* cache = nullptr) {
    const SlabSelection selection = select_slabs(v.descriptor, v.descriptor_path, extent);
    const ExtentSources sources = open_extent_sources(pool, v.descriptor, v.descriptor_path, selection);
    const StepChoice choice = choose_whole_step(sources.by_slab);
    REQUIRE(choice.whole);
    (void)dims;
    return StitchedPlanes::map(kind, selection, choice.buffers, v.descriptor.dims, extent, cache);
}

}  // namespace

TEST_CASE("an extent across slabs is their planes mapped back to back, where planes are whole pages") {
    const long page = ::sysconf(_SC_PAGESIZE);
    const Dims dims{64, 64, 12};  // a plane: 16 KiB of values, 4 KiB of ages; slabs of 4 planes
    REQUIRE((dims.plane() * 4) % page == 0);
    const SlabVolume v(dims, 4, {0, 1, 2});
    SlabPool pool;
    const int extent[6] = {0, 63, 0, 63, 3, 10};  // ParaView's piece: ghost plane 3, then slab 1 and part of 2
    const auto values = stitch(v, dims, extent, StitchedPlanes::Kind::Values, pool);
    REQUIRE(values);
    CHECK(values->bytes() == 8u * 64 * 64 * sizeof(float));
    const auto* f = static_cast<const float*>(values->data());
    std::size_t i = 0;
    for (int z = 3; z <= 10; ++z)
        for (int y = 0; y < 64; ++y)
            for (int x = 0; x < 64; ++x) {
                // Plane 3 comes from slab 0 (its owner), the rest from 1 and 2.
                INFO("x " << x << " y " << y << " z " << z);
                REQUIRE(f[i++] == SlabVolume::value_at(z / 4, x, y, z, dims));
            }
    const auto ages = stitch(v, dims, extent, StitchedPlanes::Kind::Ages, pool);
    REQUIRE(ages);
    CHECK(ages->bytes() == 8u * 64 * 64);
    const auto* a = static_cast<const std::uint8_t*>(ages->data());
    CHECK(std::all_of(a, a + ages->bytes(), [](std::uint8_t age) { return age == 0; }));
}

TEST_CASE("a step shown again from the same buffers reuses its stitched range; a replaced slab file's is let go") {
    const Dims dims{64, 64, 12};
    SlabVolume v(dims, 4, {0, 1, 2});
    SlabPool pool;
    StitchCache cache;
    const int extent[6] = {0, 63, 0, 63, 3, 10};
    const void* first = stitch(v, dims, extent, StitchedPlanes::Kind::Values, pool, &cache)->data();
    CHECK(cache.size() == 1);
    CHECK(stitch(v, dims, extent, StitchedPlanes::Kind::Values, pool, &cache)->data() == first);
    // A new step in other buffers: another range, the first kept for when they come round again.
    for (int k : {0, 1, 2}) v.write_slab(k, v.slab_file(k), 0.5f, 1);
    const auto next = stitch(v, dims, extent, StitchedPlanes::Kind::Values, pool, &cache);
    CHECK(next->data() != first);
    CHECK(cache.size() == 2);
    CHECK(static_cast<const float*>(next->data())[0] == SlabVolume::value_at(0, 0, 0, 3, dims) + 0.5f);
    // Slab 1's file replaced (a new inode): every range over the old one goes.
    REQUIRE(::unlink(v.slab_file(1).c_str()) == 0);
    v.write_slab(1, v.slab_file(1), 0.25f, 1);
    const auto replaced = stitch(v, dims, extent, StitchedPlanes::Kind::Values, pool, &cache);
    CHECK(cache.size() == 1);
    const auto* f = static_cast<const float*>(replaced->data());
    CHECK(f[dims.plane()] == SlabVolume::value_at(1, 0, 0, 4, dims) + 0.25f);
}

TEST_CASE("planes that are not whole pages, or part planes, are not stitched") {
    const Dims odd{5, 4, 12};  // 80 bytes a plane
    const SlabVolume v(odd, 4, {0, 1, 2});
    SlabPool pool;
    const int whole[6] = {0, 4, 0, 3, 2, 10};
    CHECK_FALSE(StitchedPlanes::possible(StitchedPlanes::Kind::Values, odd));
    CHECK_FALSE(stitch(v, odd, whole, StitchedPlanes::Kind::Values, pool));

    const Dims paged{64, 64, 12};
    const SlabVolume w(paged, 4, {0, 1, 2});
    const int part_rows[6] = {0, 31, 0, 63, 2, 10};
    CHECK_FALSE(stitch(w, paged, part_rows, StitchedPlanes::Kind::Values, pool));
    // 32x32 points: whole pages of values (4 KiB), not of ages (1 KiB).
    CHECK(StitchedPlanes::possible(StitchedPlanes::Kind::Values, Dims{32, 32, 8}));
    CHECK_FALSE(StitchedPlanes::possible(StitchedPlanes::Kind::Ages, Dims{32, 32, 8}));
}
