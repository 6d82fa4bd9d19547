// The values of a requested extent, without VTK: assembled plane by plane from
// real slabs in /dev/shm (owners, and a neighbour's ghost copy for a plane whose
// owner is on another host), or handed out as a pointer into one slab.
#include "slab_volume.h"

#include "slabcast/extent_values.h"
#include "slabcast/slab_selection.h"
#include "slabcast/step_choice.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <vector>

using namespace slabcast;

namespace {

const Dims kDims{5, 4, 12};  // three slabs of depth 4: planes 0-3, 4-7, 8-11

// `extent` assembled from the volume's slabs, as the reader does it.
struct Assembled {
    SlabSelection selection;
    std::vector<float> values;
};
Assembled assemble(const SlabVolume& v, const int extent[6]) {
    SlabPool pool;
    Assembled a;
    a.selection = select_slabs(v.descriptor, v.descriptor_path, extent);
    const ExtentSources sources = open_extent_sources(pool, v.descriptor, v.descriptor_path, a.selection);
    const StepChoice choice = choose_whole_step(sources.by_slab);
    REQUIRE(choice.whole);
    a.values.assign(static_cast<std::size_t>(extent_value_count(extent)), -1.f);
    assemble_extent(a.selection, choice.buffers, kDims, extent, a.values.data());
    return a;
}

// Every value of `extent` in `values` (x fastest) is the one slab `source(z)` stores at its place.
template <class Source>
void check_values(const std::vector<float>& values, const int extent[6], Source source) {
    std::size_t i = 0;
    for (int z = extent[4]; z <= extent[5]; ++z)
        for (int y = extent[2]; y <= extent[3]; ++y)
            for (int x = extent[0]; x <= extent[1]; ++x) {
                INFO("x " << x << " y " << y << " z " << z);
                REQUIRE(values.at(i++) == SlabVolume::value_at(source(z), x, y, z, kDims));
            }
    CHECK(i == values.size());
}

}  // namespace

TEST_CASE("an extent across three slabs lands value by value in x-fastest order") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    const int whole_rows[6] = {0, 4, 0, 3, 2, 10};  // one copy per plane
    const Assembled a = assemble(v, whole_rows);
    CHECK(a.selection.zero_copy_slab == -1);
    CHECK(a.values.size() == 5u * 4 * 9);
    check_values(a.values, whole_rows, [](int z) { return z / 4; });

    const int inner[6] = {1, 3, 1, 2, 3, 8};  // part rows: one copy per row
    check_values(assemble(v, inner).values, inner, [](int z) { return z / 4; });
}

TEST_CASE("a plane whose owner is on another host is copied from the next slab's ghost plane") {
    const SlabVolume v(kDims, 4, {1, 2});  // slab 0 (planes 0-3) lives elsewhere
    const int extent[6] = {0, 4, 1, 3, 3, 11};
    const Assembled a = assemble(v, extent);
    CHECK(a.selection.planes.front().ghost);
    // Plane 3 is slab 1's ghost copy; plane 7 is owned by slab 1, not taken from slab 2's ghost.
    check_values(a.values, extent, [](int z) { return z == 3 ? 1 : z / 4; });
}

TEST_CASE("one slab's piece is handed out as a pointer into its mapping") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    const int piece[6] = {0, 4, 0, 3, 3, 7};  // slab 1's stored planes: ghost 3 and owned 4-7
    const SlabSelection sel = select_slabs(v.descriptor, v.descriptor_path, piece);
    REQUIRE(sel.zero_copy_slab == 1);
    SlabPool pool;
    const ExtentSources sources = open_extent_sources(pool, v.descriptor, v.descriptor_path, sel);
    // Plane 3 is owned by slab 0, but the piece reads slab 1's ghost copy:
    // slab 0 is not opened, so its step cannot hold this piece back.
    CHECK(sources.by_slab.size() == 1);
    REQUIRE(sources.used.size() == 1);
    const SlabMapping& m = *sources.used.front();
    CHECK(m.geometry().index == 1);
    const SlabBuffer b = choose_whole_step(sources.by_slab).buffers.at(1);
    const float* values = zero_copy_values(b, kDims, 3);
    CHECK(values == m.values(b.buffer));
    const float* from_plane_5 = zero_copy_values(b, kDims, 5);
    CHECK(from_plane_5 == m.values(b.buffer) + 2 * kDims.plane());
    CHECK(zero_copy_ages(b, kDims, 5) == m.ages(b.buffer) + 2 * kDims.plane());
    CHECK(from_plane_5[kDims.plane() - 1] == SlabVolume::value_at(1, 4, 3, 5, kDims));
    check_values(std::vector<float>(values, values + extent_value_count(piece)), piece, [](int) { return 1; });
}

TEST_CASE("a slab cut short under the reader is refused before its pages are read") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    const int extent[6] = {0, 4, 0, 3, 0, 11};
    SlabPool pool;
    const SlabSelection sel = select_slabs(v.descriptor, v.descriptor_path, extent);
    const ExtentSources sources = open_extent_sources(pool, v.descriptor, v.descriptor_path, sel);
    const StepChoice choice = choose_whole_step(sources.by_slab);
    std::filesystem::resize_file(v.slab_file(2), kSlabHeaderBytes);
    std::vector<float> out(static_cast<std::size_t>(extent_value_count(extent)));
    CHECK_THROWS_WITH(assemble_extent(sel, choice.buffers, kDims, extent, out.data()),
                      Catch::StartsWith(v.slab_file(2)) && Catch::Contains("truncated under the reader"));
    CHECK_THROWS_WITH(zero_copy_values(choice.buffers.at(2), kDims, 7), Catch::Contains("truncated"));
}

TEST_CASE("a copied extent's memory is its own mapping, page aligned, and too much is refused") {
    float* values = map_values(1000);
    CHECK(reinterpret_cast<std::uintptr_t>(values) % 4096 == 0);
    values[0] = 1.f;
    values[999] = 2.f;
    CHECK(values[0] + values[999] == 3.f);
    unmap_values(values);
    CHECK_THROWS_WITH(map_values(std::int64_t{1} << 60), Catch::Contains("more than this host's"));
    const int extent[6] = {1, 3, 0, 0, 2, 5};
    CHECK(extent_value_count(extent) == 3 * 1 * 4);
}
