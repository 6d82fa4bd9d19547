// The reader's pool of slab mappings: kept while the file under the name is
// the same and whole, reopened when a receiver renamed a new one over it,
// refused when cut short or not what the descriptor says; and the keep-alive
// that holds a mapping for the arrays pointing into it.
#include "slab_volume.h"

#include "slabcast/slab_pool.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace slabcast;

namespace {
const Dims kDims{5, 4, 12};
}  // namespace

TEST_CASE("the pool keeps a slab's mapping while the same whole file is under its name") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    SlabPool pool;
    const SlabMappingPtr first = pool.get(v.descriptor, v.descriptor_path, v.descriptor.slabs[1]);
    CHECK(first->geometry().index == 1);
    CHECK(first->values(0)[0] == SlabVolume::value_at(1, 0, 0, 3, kDims));  // its ghost plane
    CHECK(pool.get(v.descriptor, v.descriptor_path, v.descriptor.slabs[1]) == first);
    pool.clear();
    CHECK(pool.get(v.descriptor, v.descriptor_path, v.descriptor.slabs[1]) != first);
}

TEST_CASE("a slab a receiver renamed over the old one is reopened; the old mapping stays valid") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    SlabPool pool;
    const SlabEntry& entry = v.descriptor.slabs[2];
    const SlabMappingPtr old = pool.get(v.descriptor, v.descriptor_path, entry);
    v.write_slab(2, v.dir.file("v.slab2.new"), 0.5f);
    std::filesystem::rename(v.dir.file("v.slab2.new"), v.slab_file(2));

    const SlabMappingPtr fresh = pool.get(v.descriptor, v.descriptor_path, entry);
    CHECK(fresh != old);
    CHECK(fresh->inode() != old->inode());
    CHECK(fresh->values(0)[0] == SlabVolume::value_at(2, 0, 0, 7, kDims) + 0.5f);
    CHECK(old->values(0)[0] == SlabVolume::value_at(2, 0, 0, 7, kDims));  // what the arrays in hand still show
    CHECK(pool.get(v.descriptor, v.descriptor_path, entry) == fresh);
}

TEST_CASE("a slab cut short is refused by name, also when the pool had it open") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    SlabPool pool;
    const SlabEntry& entry = v.descriptor.slabs[0];
    SlabMappingPtr held = pool.get(v.descriptor, v.descriptor_path, entry);
    std::filesystem::resize_file(v.slab_file(0), kSlabHeaderBytes + 8);
    CHECK_FALSE(held->not_truncated());
    held.reset();  // never touch pages past the new end
    CHECK_THROWS_WITH(pool.get(v.descriptor, v.descriptor_path, entry),
                      Catch::StartsWith(v.slab_file(0)) && Catch::Contains("truncated"));
}

TEST_CASE("a slab rewritten in place under the pool's mapping is named, not shown as a slab with no step") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    SlabPool pool;
    const SlabEntry& entry = v.descriptor.slabs[2];
    const SlabMappingPtr held = pool.get(v.descriptor, v.descriptor_path, entry);
    CHECK(held->header_problem().empty());
    // Cut to nothing and grown back: the same inode and size, every byte zero.
    const auto size = std::filesystem::file_size(v.slab_file(2));
    std::filesystem::resize_file(v.slab_file(2), 0);
    std::filesystem::resize_file(v.slab_file(2), size);
    CHECK(held->not_truncated());
    CHECK(held->header_problem() == "not a slabcast slab (bad magic)");
    CHECK_THROWS_WITH(pool.get(v.descriptor, v.descriptor_path, entry),
                      Catch::StartsWith(v.slab_file(2)) && Catch::Contains("not a slabcast slab (bad magic)") &&
                          Catch::Contains("rewritten in place while the reader had it mapped"));
    CHECK_THROWS_WITH(pool.get(v.descriptor, v.descriptor_path, entry),
                      Catch::StartsWith(v.slab_file(2)) && Catch::Contains("bad magic"));
    // Written again whole (as a receiver would): read as any slab.
    v.write_slab(2, v.slab_file(2), 0.25f);
    const SlabMappingPtr again = pool.get(v.descriptor, v.descriptor_path, entry);
    CHECK(again->values(0)[0] == SlabVolume::value_at(2, 0, 0, 7, kDims) + 0.25f);
}

TEST_CASE("a missing slab, or one that is not what the descriptor says, names the file and the problem") {
    SlabVolume v(kDims, 4, {0, 1, 2});
    SlabPool pool;
    std::filesystem::remove(v.slab_file(1));
    CHECK_THROWS_WITH(pool.get(v.descriptor, v.descriptor_path, v.descriptor.slabs[1]),
                      Catch::StartsWith(v.slab_file(1)) && Catch::Contains("cannot open slab 1") &&
                          Catch::Contains(v.descriptor_path));

    Descriptor other_field = v.descriptor;
    other_field.field = "temperature";
    CHECK_THROWS_WITH(pool.get(other_field, v.descriptor_path, v.descriptor.slabs[0]),
                      Catch::Contains("does not match descriptor") &&
                          Catch::Contains("field 'density', descriptor says 'temperature'"));

    // Slab 2's file listed as slab 0: a stale or hand-edited descriptor.
    const SlabEntry wrong{0, slab_file_name("v", 2)};
    CHECK_THROWS_WITH(pool.get(v.descriptor, v.descriptor_path, wrong),
                      Catch::Contains("slab 2 of depth 4, descriptor says slab 0 of depth 4"));
}

TEST_CASE("arrays keep a mapping alive: one reference per array, dropped when each is freed") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    const std::size_t before = mappings_held_by_arrays();
    std::weak_ptr<const SlabMapping> watch;
    float* values = nullptr;
    {
        SlabPool pool;
        const SlabMappingPtr m = pool.get(v.descriptor, v.descriptor_path, v.descriptor.slabs[1]);
        watch = m;
        values = const_cast<float*>(m->values(0));
        retain_mapping_for(m, values);  // two outputs of one unchanged piece
        retain_mapping_for(m, values);
    }  // the pool and the reader's pointer are gone
    CHECK(mappings_held_by_arrays() == before + 2);
    REQUIRE_FALSE(watch.expired());
    CHECK(values[0] == SlabVolume::value_at(1, 0, 0, 3, kDims));

    release_mapping_of(values);
    CHECK(mappings_held_by_arrays() == before + 1);
    CHECK_FALSE(watch.expired());
    int unknown = 0;
    release_mapping_of(&unknown);  // memory no mapping was registered for: nothing happens
    CHECK(mappings_held_by_arrays() == before + 1);
    release_mapping_of(values);
    CHECK(mappings_held_by_arrays() == before);
    CHECK(watch.expired());  // unmapped with the last array
}
