#include "slabcast/volume.h"

#include <catch2/catch.hpp>

using namespace slabcast;

TEST_CASE("dims parse and reject") {
    CHECK(parse_dims("1024,1024,1024") == Dims{1024, 1024, 1024});
    CHECK(parse_dims("64x32x16") == Dims{64, 32, 16});
    CHECK_THROWS_WITH(parse_dims("64,64"), Catch::Contains("expected NX,NY,NZ"));
    CHECK_THROWS_WITH(parse_dims("0,1,1"), Catch::Contains("1..1048576"));
    CHECK_THROWS_WITH(parse_dims("4,4,4,4"), Catch::Contains("trailing"));
    CHECK_THROWS(parse_dims("a,b,c"));
}

TEST_CASE("slab geometry of the paper's volume") {
    const Dims d{1024, 1024, 1024};
    CHECK(slab_count(d, 32) == 32);
    const auto s0 = slab_geometry(d, 32, 0, 1);
    CHECK(s0.z_begin == 0);
    CHECK(s0.z_end == 32);
    CHECK(s0.stored_z_begin == 0);  // no plane below slab 0
    const auto s5 = slab_geometry(d, 32, 5, 1);
    CHECK(s5.z_begin == 160);
    CHECK(s5.stored_z_begin == 159);
    CHECK(s5.stored_planes() == 33);
    const auto last = slab_geometry(d, 32, 31, 1);
    CHECK(last.z_end == 1024);
    CHECK_THROWS_WITH(slab_geometry(d, 32, 32, 1), Catch::Contains("outside 0..31"));
    CHECK_THROWS(slab_geometry(d, 32, -1, 1));
}

TEST_CASE("ParaView's z-split of S pieces equals the slabs' stored ranges") {
    // vtkExtentTranslator splits a point extent [0, NZ-1] into pieces whose
    // bounds are floor((NZ-1)*k/S); slab k with one ghost plane must match.
    for (int depth : {1, 2, 16, 32}) {
        for (int slabs : {1, 2, 4, 32}) {
            const Dims d{8, 8, static_cast<std::int64_t>(depth) * slabs};
            for (int k = 0; k < slabs; ++k) {
                const auto g = slab_geometry(d, depth, k, 1);
                const std::int64_t lo = (d.nz - 1) * k / slabs;
                const std::int64_t hi = (d.nz - 1) * (k + 1) / slabs;
                CHECK(g.stored_z_begin == lo);
                CHECK(g.z_end - 1 == hi);
            }
        }
    }
}

TEST_CASE("a last slab shorter than the depth") {
    const Dims d{4, 4, 70};
    CHECK(slab_count(d, 32) == 3);
    const auto g = slab_geometry(d, 32, 2, 1);
    CHECK(g.z_begin == 64);
    CHECK(g.z_end == 70);
    CHECK(g.owned_planes() == 6);
}

TEST_CASE("slab offsets at the corners of the volume") {
    const Dims d{1024, 1024, 1024};
    const auto g = slab_geometry(d, 32, 5, 1);
    CHECK(slab_offset(d, g, 0, 0, 159) == 0);                                // ghost plane, first value
    CHECK(slab_offset(d, g, 0, 0, 160) == 1024 * 1024);                      // first owned value
    CHECK(slab_offset(d, g, 1023, 1023, 191) == 33LL * 1024 * 1024 - 1);    // last stored value
    CHECK(volume_offset(d, 1023, 1023, 1023) == 1024LL * 1024 * 1024 - 1);
    CHECK(volume_offset(d, 1, 2, 3) == (3LL * 1024 + 2) * 1024 + 1);
}
