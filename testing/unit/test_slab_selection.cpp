// Which slab supplies each plane of a requested extent (the reader's VTK-free
// core): one piece per slab is zero-copy, other extents are assembled, planes
// of slabs on other hosts come from a neighbour's ghost copy or are an error
// that names the slab and its expected file.
#include "slabcast/slab_selection.h"

#include <catch2/catch.hpp>

#include <stdexcept>

using slabcast::Descriptor;
using slabcast::select_slabs;

namespace {

Descriptor volume(std::initializer_list<int> slabs) {
    Descriptor d;
    d.name = "v";
    d.dims = slabcast::Dims{8, 4, 40};
    d.slab_depth = 10;
    d.ghost_planes = 1;
    for (int k : slabs) d.slabs.push_back(slabcast::SlabEntry{k, "v.slab" + std::to_string(k)});
    return d;
}

}  // namespace

TEST_CASE("ParaView's z-split into one piece per slab is each slab's stored range: zero copy") {
    const Descriptor d = volume({0, 1, 2, 3});
    const int pieces[4][2] = {{0, 9}, {9, 19}, {19, 29}, {29, 39}};
    for (int k = 0; k < 4; ++k) {
        const int ext[6] = {0, 7, 0, 3, pieces[k][0], pieces[k][1]};
        const auto s = select_slabs(d, "/shm/v.slabcast", ext);
        CHECK(s.zero_copy_slab == k);
        REQUIRE(s.planes.size() == static_cast<std::size_t>(pieces[k][1] - pieces[k][0] + 1));
        CHECK(s.planes.front().slab == (k == 0 ? 0 : k - 1));  // the shared plane's owner, for the copy path
    }
}

TEST_CASE("an extent spanning slabs, or not whole rows, is assembled from owners") {
    const Descriptor d = volume({0, 1, 2, 3});
    const int across[6] = {0, 7, 0, 3, 5, 25};
    const auto s = select_slabs(d, "/shm/v.slabcast", across);
    CHECK(s.zero_copy_slab == -1);
    CHECK(s.planes[0].slab == 0);
    CHECK(s.planes[5].slab == 1);   // plane 10
    CHECK(s.planes[20].slab == 2);  // plane 25
    for (const auto& p : s.planes) CHECK_FALSE(p.ghost);
    const int narrow[6] = {1, 7, 0, 3, 10, 12};
    CHECK(select_slabs(d, "/shm/v.slabcast", narrow).zero_copy_slab == -1);
}

TEST_CASE("a plane whose owner is on another host comes from the next slab's ghost copy") {
    const Descriptor d = volume({2, 3});
    const int ext[6] = {0, 7, 0, 3, 19, 39};
    const auto s = select_slabs(d, "/shm/v.slabcast", ext);
    CHECK(s.planes[0].slab == 2);
    CHECK(s.planes[0].ghost);
    CHECK(s.zero_copy_slab == -1);  // planes 19..39 lie in two slabs
}

TEST_CASE("a plane no slab on this host stores is an error naming the slab and its file") {
    const Descriptor d = volume({0, 1, 3});
    const int ext[6] = {0, 7, 0, 3, 0, 39};
    try {
        select_slabs(d, "/shm/v.slabcast", ext);
        FAIL("no error");
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        CHECK(what.find("/shm/v.slabcast: slab 2 (planes 20..29) is not in this host's shared memory") == 0);
        CHECK(what.find("lists slabs 0,1,3") != std::string::npos);
        CHECK(what.find("expected file /shm/v.slab2") != std::string::npos);
    }
}

TEST_CASE("a strided extent reads every stride-th plane; a first plane on another host is replaced by the nearest here") {
    // 40 planes at stride 3: points 0..13 of the strided volume are planes 0, 3, ..., 39.
    const int whole[6] = {0, 2, 0, 1, 0, 13};
    const auto all = slabcast::select_strided_slabs(volume({0, 1, 2, 3}), "/shm/v.slabcast", whole, 3);
    REQUIRE(all.planes.size() == 14);
    for (int i = 0; i < 14; ++i) {
        CHECK(all.planes[i].z == 3 * i);
        CHECK(all.planes[i].slab == 3 * i / 10);
    }
    CHECK(all.zero_copy_slab == -1);
    // Slabs 2 and 3 here (planes 19..39 with slab 2's ghost): a piece from
    // strided plane 6 (plane 18, slab 1's) starts at the nearest stored, 19.
    const int piece[6] = {0, 2, 0, 1, 6, 13};
    const auto s = slabcast::select_strided_slabs(volume({2, 3}), "/shm/v.slabcast", piece, 3);
    REQUIRE(s.planes.size() == 8);
    CHECK(s.planes[0].z == 19);
    CHECK(s.planes[0].slab == 2);
    CHECK(s.planes[0].ghost);
    CHECK(s.planes[1].z == 21);
    // Further than stride - 1 from anything here: the same error as unstrided.
    const int far[6] = {0, 2, 0, 1, 5, 13};  // plane 15: 4 from 19
    CHECK_THROWS_WITH(slabcast::select_strided_slabs(volume({2, 3}), "/shm/v.slabcast", far, 3),
                      Catch::Contains("slab 1 (planes 10..19) is not in this host's shared memory"));
}
