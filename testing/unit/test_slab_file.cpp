// Slab files and descriptors: the contract with the ParaView reader.
#include "temp_shm_dir.h"

#include "slabcast/dataset.h"
#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"

#include <catch2/catch.hpp>

#include <fstream>

using namespace slabcast;

namespace {
const Dims kDims{16, 8, 32};
void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
void patch(const std::string& path, long offset, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
}  // namespace

TEST_CASE("a created slab opens read-only with the same geometry, page aligned") {
    TempShmDir dir;
    const auto g = slab_geometry(kDims, 8, 2, 1);
    {
        auto m = SlabMapping::create(dir.file("a.slab2"), kDims, 8, g, "density");
        m.values_rw()[0] = 42.f;
    }
    const auto r = SlabMapping::open_read_only(dir.file("a.slab2"));
    CHECK(r.dims() == kDims);
    CHECK(r.geometry().stored_z_begin == 15);
    CHECK(r.geometry().z_end == 24);
    CHECK(r.value_count() == 16u * 8 * 9);
    CHECK(std::string(r.header().field) == "density");
    CHECK(r.values()[0] == 42.f);
    CHECK(reinterpret_cast<std::uintptr_t>(r.values()) % 4096 == 0);
    CHECK(r.header().live.step == -1);
}

TEST_CASE("re-creating a slab of the same shape keeps its data; another shape starts afresh") {
    TempShmDir dir;
    const auto g = slab_geometry(kDims, 8, 1, 1);
    SlabMapping::create(dir.file("b.slab1"), kDims, 8, g, "density").values_rw()[5] = 7.f;
    CHECK(SlabMapping::create(dir.file("b.slab1"), kDims, 8, g, "density").values()[5] == 7.f);
    const Dims other{16, 8, 64};
    CHECK(SlabMapping::create(dir.file("b.slab1"), other, 8, slab_geometry(other, 8, 1, 1), "density").values()[5] == 0.f);
}

TEST_CASE("bad slab files name the file and the problem") {
    TempShmDir dir;
    const std::string path = dir.file("c.slab0");
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains(path) && Catch::Contains("cannot open"));
    write_text(path, "tiny");
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("truncated"));

    SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 0, 1), "density");
    patch(path, 0, "NOTASLAB");
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("bad magic"));

    std::filesystem::remove(path);
    SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 0, 1), "density");
    patch(path, 8, std::string("\x09\0\0\0", 4));
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("version 9"));

    std::filesystem::remove(path);
    SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 0, 1), "density");
    std::filesystem::resize_file(path, 4096 + 100);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains(path) && Catch::Contains("truncated"));

    std::filesystem::remove(path);
    SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 0, 1), "density");
    patch(path, 48, std::string("\xff\xff\0\0", 4));  // z_end beyond the volume
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("corrupt header"));
}

TEST_CASE("descriptor round trip") {
    TempShmDir dir;
    Descriptor d;
    d.name = "cosmo";
    d.field = "density";
    d.dims = kDims;
    d.slab_depth = 8;
    d.ghost_planes = 1;
    d.spacing[2] = 2.5;
    d.slabs = {{0, "/dev/shm/x.slab0"}, {3, "/dev/shm/x.slab3"}};
    write_descriptor(dir.file("cosmo.slabcast"), d);
    const Descriptor r = read_descriptor(dir.file("cosmo.slabcast"));
    CHECK(r.name == "cosmo");
    CHECK(r.dims == kDims);
    CHECK(r.slab_depth == 8);
    CHECK(r.spacing[2] == 2.5);
    REQUIRE(r.slabs.size() == 2);
    CHECK(r.slabs[1].index == 3);
    CHECK(r.slabs[1].path == "/dev/shm/x.slab3");
}

TEST_CASE("bad descriptors name the file and the problem") {
    TempShmDir dir;
    const std::string p = dir.file("bad.slabcast");
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains(p) && Catch::Contains("cannot open"));
    write_text(p, "{\"format\": \"slabcast\", \"version\": 1, ");
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("not valid JSON"));
    write_text(p, "[1,2]");
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("not a slabcast descriptor"));
    const std::string good = descriptor_to_json(Descriptor{"n", "density", kDims, 8, 1, {0, 0, 0}, {1, 1, 1}, {{0, "/x"}}});
    std::string wrong_version = good;
    wrong_version.replace(wrong_version.find("\"version\": 1"), 12, "\"version\": 2");
    write_text(p, wrong_version);
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("descriptor version 2"));
    std::string no_dims = good;
    no_dims.replace(no_dims.find("\"dims\""), 6, "\"dimz\"");
    write_text(p, no_dims);
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("missing field 'dims'"));
    std::string bad_slab = good;
    bad_slab.replace(bad_slab.find("\"index\": 0"), 10, "\"index\": 9");
    write_text(p, bad_slab);
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("slab index 9 outside 0..3"));
}

TEST_CASE("bad dataset descriptors name the file and the problem") {
    TempShmDir dir;
    CHECK_THROWS_WITH(read_dataset(dir.path), Catch::Contains("dataset.json") && Catch::Contains("cannot open"));
    write_text(dir.file("dataset.json"),
               R"({"name":"d","field":"rho","dtype":"float64","dims":[2,2,2],"steps":[{"step":0,"file":"a.raw"}]})");
    CHECK_THROWS_WITH(read_dataset(dir.path), Catch::Contains("only dtype float32"));
    write_text(dir.file("dataset.json"),
               R"({"name":"d","field":"rho","dtype":"float32","dims":[2,2,2],"steps":[{"step":0,"file":"../a.raw"}]})");
    CHECK_THROWS_WITH(read_dataset(dir.path), Catch::Contains("plain name"));
    write_text(dir.file("dataset.json"),
               R"({"name":"d","field":"rho","dtype":"float32","dims":[2,2,2],"steps":[{"step":0,"file":"a.raw"}]})");
    const Dataset d = read_dataset(dir.path);
    CHECK(d.step_bytes() == 32);
    CHECK(d.step_path(d.steps[0]) == dir.path + "/a.raw");
}
