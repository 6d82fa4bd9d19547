// What the slabs behind an output say now (headers, the lowest step) and the
// live poll's digest: it moves when a slab starts or ends a step, when the
// descriptor is rewritten, when a slab is replaced or cut short, and not
// otherwise.
#include "slab_volume.h"

#include "slabcast/live_slabs.h"
#include "slabcast/publication.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace slabcast;

namespace {
const Dims kDims{5, 4, 12};

std::vector<SlabMappingPtr> open_all(const SlabVolume& v) {
    std::vector<SlabMappingPtr> used;
    for (const auto& e : v.descriptor.slabs)
        used.push_back(std::make_shared<const SlabMapping>(SlabMapping::open_read_only(v.dir.file(e.file))));
    return used;
}

// The receiver's side: slab `k` begins `step` (its live counters) and, unless
// `publish` is false, publishes it.
void set_step(const SlabVolume& v, int k, std::int64_t step, bool publish = true) {
    auto m = SlabMapping::create(v.slab_file(k), kDims, 4, slab_geometry(kDims, 4, k, 1), "density");
    m.header_rw().live.step = step;
    m.header_rw().live.generation.fetch_add(1);
    if (publish) publish_buffer(m, take_buffer(m), PublishInfo{step, 1, 1, 0, true});
}
}  // namespace

TEST_CASE("the headers of the slabs behind an output") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    const auto used = open_all(v);
    CHECK(read_slab_headers(used)[0].live.step == -1);  // no step yet
    set_step(v, 0, 7);
    set_step(v, 1, 5);
    set_step(v, 2, 6);
    const auto headers = read_slab_headers(used);
    REQUIRE(headers.size() == 3);
    CHECK(headers[1].live.step == 5);
    CHECK(headers[2].slab_index == 2);

    std::filesystem::resize_file(v.slab_file(1), 100);  // below its header
    CHECK_THROWS_WITH(read_slab_headers(used),
                      Catch::StartsWith(v.slab_file(1)) && Catch::Contains("truncated under the reader"));
}

TEST_CASE("the live digest moves with a new step, a new descriptor, a replaced or cut slab, and only then") {
    SlabVolume v(kDims, 4, {0, 1, 2});
    const auto used = open_all(v);
    const std::uint64_t start = live_signature(v.descriptor_path, used);
    CHECK(live_signature(v.descriptor_path, used) == start);

    const std::uint64_t without_slab_1 = live_signature(v.descriptor_path, {used[0], used[2]});
    // A step begun is news only to a reader following writes (Newest data);
    // a whole-steps reader waits for its publication.
    const std::uint64_t writes_before = live_signature(v.descriptor_path, used, LiveFollow::Writes);
    set_step(v, 1, 1, false);
    CHECK(live_signature(v.descriptor_path, used) == start);
    CHECK(live_signature(v.descriptor_path, used, LiveFollow::Writes) != writes_before);
    set_step(v, 1, 1);
    const std::uint64_t stepped = live_signature(v.descriptor_path, used);
    CHECK(stepped != start);
    // A slab the output does not use is no news.
    CHECK(live_signature(v.descriptor_path, {used[0], used[2]}) == without_slab_1);

    write_descriptor(v.descriptor_path, v.descriptor);  // a restarted receiver rewrites it
    const std::uint64_t rewritten = live_signature(v.descriptor_path, used);
    CHECK(rewritten != stepped);
    std::filesystem::remove(v.descriptor_path);
    CHECK(live_signature(v.descriptor_path, used) != rewritten);
    write_descriptor(v.descriptor_path, v.descriptor);

    const std::uint64_t before_replace = live_signature(v.descriptor_path, used);
    v.write_slab(2, v.dir.file("v.slab2.new"));
    std::filesystem::rename(v.dir.file("v.slab2.new"), v.slab_file(2));
    const std::uint64_t replaced = live_signature(v.descriptor_path, used);
    CHECK(replaced != before_replace);

    std::filesystem::resize_file(v.slab_file(0), kSlabHeaderBytes + 4);
    CHECK(live_signature(v.descriptor_path, used) != replaced);
}
