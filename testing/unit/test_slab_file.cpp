// Slab files and descriptors: the contract with the ParaView reader.
#include "temp_shm_dir.h"

#include "slabcast/confined_path.h"
#include "slabcast/dataset.h"
#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
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
        m.values_rw(0)[0] = 42.f;
    }
    const auto r = SlabMapping::open_read_only(dir.file("a.slab2"));
    CHECK(r.dims() == kDims);
    CHECK(r.geometry().stored_z_begin == 15);
    CHECK(r.geometry().z_end == 24);
    CHECK(r.value_count() == 16u * 8 * 9);
    CHECK(std::string(r.header().field) == "density");
    CHECK(r.values(0)[0] == 42.f);
    CHECK(r.buffers() == kDefaultBuffers);
    for (int b = 0; b < r.buffers(); ++b) {
        CHECK(reinterpret_cast<std::uintptr_t>(r.values(b)) % 4096 == 0);
        CHECK(reinterpret_cast<std::uintptr_t>(r.ages(b)) % 4096 == 0);
        CHECK(r.header().publication[b].seq == 0);  // never published
        CHECK(r.header().publication[b].step == -1);
    }
    CHECK(r.header().live.step == -1);
    CHECK(r.header().live.writing_buffer == -1);
}

TEST_CASE("re-creating a slab of the same shape keeps its data; another shape starts afresh") {
    TempShmDir dir;
    const auto g = slab_geometry(kDims, 8, 1, 1);
    SlabMapping::create(dir.file("b.slab1"), kDims, 8, g, "density").values_rw(2)[5] = 7.f;
    CHECK(SlabMapping::create(dir.file("b.slab1"), kDims, 8, g, "density").values(2)[5] == 7.f);
    const Dims other{16, 8, 64};
    CHECK(SlabMapping::create(dir.file("b.slab1"), other, 8, slab_geometry(other, 8, 1, 1), "density").values(2)[5] == 0.f);
    // Another number of buffers is another shape too.
    CHECK(SlabMapping::create(dir.file("b.slab1"), other, 8, slab_geometry(other, 8, 1, 1), "density", 2).buffers() == 2);
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
    d.slabs = {{0, "x.slab0"}, {3, "x.slab3"}};
    CHECK(descriptor_path(dir.path, "cosmo") == dir.file("cosmo.slabcast"));
    write_descriptor(descriptor_path(dir.path, "cosmo"), d);
    const Descriptor r = read_descriptor(dir.file("cosmo.slabcast"));
    CHECK(r.name == "cosmo");
    CHECK(r.dims == kDims);
    CHECK(r.slab_depth == 8);
    CHECK(r.spacing[2] == 2.5);
    REQUIRE(r.slabs.size() == 2);
    CHECK(r.slabs[1].index == 3);
    CHECK(r.slabs[1].file == "x.slab3");
}

TEST_CASE("bad descriptors name the file and the problem") {
    TempShmDir dir;
    const std::string p = dir.file("bad.slabcast");
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains(p) && Catch::Contains("cannot open"));
    write_text(p, "{\"format\": \"slabcast\", \"version\": 1, ");
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("not valid JSON"));
    write_text(p, "[1,2]");
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("not a slabcast descriptor"));
    const std::string good = descriptor_to_json(Descriptor{"n", "density", kDims, 8, 1, {0, 0, 0}, {1, 1, 1}, {{0, "x"}}});
    std::string wrong_version = good;
    wrong_version.replace(wrong_version.find("\"version\": 2"), 12, "\"version\": 1");
    write_text(p, wrong_version);
    CHECK_THROWS_WITH(read_descriptor(p), Catch::Contains("descriptor version 1, this build reads version 2"));
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

// ---- Hostile slab files and descriptors (issue 15) ----

namespace {

// A slab file written byte by byte from a header, as an attacker would: the
// sizes are whatever the test says, the file as long as `file_bytes`.
void write_raw_slab(const std::string& path, const SlabHeader& h, std::uint64_t file_bytes) {
    std::filesystem::remove(path);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(&h), sizeof h);
    std::filesystem::resize_file(path, file_bytes);
}

// A sound header of kDims, depth 8, slab 1, one ghost plane; tests spoil it.
void sound_header(SlabHeader& h) {
    std::memset(static_cast<void*>(&h), 0, sizeof h);
    std::memcpy(h.magic, kSlabMagic, sizeof h.magic);
    h.version = kSlabVersion;
    h.header_bytes = kSlabHeaderBytes;
    h.value_type = kValueFloat32;
    h.nx = 16, h.ny = 8, h.nz = 32;
    h.slab_index = 1, h.slab_depth = 8, h.z_begin = 8, h.z_end = 16, h.stored_z_begin = 7;
    h.data_bytes = 16 * 8 * 9 * 4;  // 4608: a buffer takes two pages, its ages one
    h.buffers = 3;
    h.buffer_stride = 8192;
    h.ages_offset = 4096 + 3 * 8192;
    h.age_stride = 4096;
    std::strcpy(h.field, "density");
}

const std::uint64_t kSoundFileBytes = 4096 + 3 * 8192 + 3 * 4096;

std::string base_descriptor(const std::string& dims, const std::string& depth, const std::string& slabs) {
    return R"({"format": "slabcast", "version": 2, "name": "c", "field": "density", "ghost_planes": 1, "dims": )" +
           dims + R"(, "slab_depth": )" + depth + R"(, "slabs": )" + slabs + "}";
}

}  // namespace

TEST_CASE("a hand-made sound header opens: the hostile cases below differ from it in one field only") {
    TempShmDir dir;
    SlabHeader h;
    sound_header(h);
    write_raw_slab(dir.file("s.slab1"), h, kSoundFileBytes);
    const auto m = SlabMapping::open_read_only(dir.file("s.slab1"));
    CHECK(m.dims() == kDims);
    CHECK(m.value_count() == 16u * 8 * 9);
}

TEST_CASE("version 2 layout: K value buffers, then K age buffers, each page aligned; a bad count or layout is refused") {
    SlabLayout l;
    REQUIRE(slab_layout(16 * 8 * 9, 3, l));
    CHECK(l.data_bytes == 4608);
    CHECK(l.buffer_stride == 8192);
    CHECK(l.ages_offset == 4096 + 3 * 8192);
    CHECK(l.age_stride == 4096);
    CHECK(l.file_bytes == kSoundFileBytes);
    CHECK_FALSE(slab_layout(100, 1, l));   // fewer than kMinBuffers
    CHECK_FALSE(slab_layout(100, 17, l));  // more than kMaxBuffers
    CHECK_FALSE(slab_layout(std::uint64_t{1} << 62, 3, l));  // wraps

    TempShmDir dir;
    const std::string path = dir.file("l.slab1");
    SlabHeader h;
    sound_header(h);
    h.buffers = 1;
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("1 buffers, not 2..16"));
    sound_header(h);
    h.ages_offset = 4096;  // ages over the values
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("buffer layout"));
    sound_header(h);
    write_raw_slab(path, h, kSoundFileBytes - 1);  // the last age buffer cut by a byte
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("truncated"));
    sound_header(h);
    h.version = 1;  // a slab of a receiver from before multi-buffered slabs
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("version 1") && Catch::Contains("restart"));
    CHECK_THROWS_WITH(SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 1, 1), "density", 1),
                      Catch::Contains("1 buffers: give 2..16"));
}

TEST_CASE("slab header sizes whose product wraps, or beyond 2^20 an axis, are refused before they size anything") {
    TempShmDir dir;
    const std::string path = dir.file("h.slab0");
    SlabHeader h;
    // nx = ny = 2^30, 16 planes: nx * ny * planes * 4 = 2^66 wraps to 0 in 64
    // bits, so data_bytes 0 "matched" and a 4 KiB file passed; the reader then
    // handed VTK 2^64 floats over a 4 KiB file.
    sound_header(h);
    h.nx = h.ny = 1 << 30;
    h.nz = 16, h.slab_depth = 16, h.slab_index = 0, h.z_begin = 0, h.z_end = 16, h.stored_z_begin = 0;
    h.data_bytes = 0;
    write_raw_slab(path, h, 4096);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path),
                      Catch::Contains(path) && Catch::Contains("each size must be 1..1048576"));
    // Within the caps, a data size that does not match the planes.
    sound_header(h);
    h.data_bytes = 4;
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("data size 4 does not match"));
    // The largest legal sizes promise 2^62 bytes: more than the file.
    sound_header(h);
    h.nx = h.ny = h.nz = 1 << 20;
    h.slab_depth = 1 << 20, h.slab_index = 0, h.z_begin = 0, h.z_end = 1 << 20, h.stored_z_begin = 0;
    h.data_bytes = std::uint64_t{1} << 62;
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("buffer layout"));
    // A huge slab depth, and negative sizes.
    sound_header(h);
    h.slab_depth = 1 << 30;
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("slab depth 1073741824 must be 1..1048576"));
    sound_header(h);
    h.ny = -8;
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("corrupt header: dims"));
}

TEST_CASE("a slab header's index, depth and plane range must agree with each other") {
    TempShmDir dir;
    const std::string path = dir.file("g.slab1");
    SlabHeader h;
    sound_header(h);
    h.slab_index = 4;  // 32 planes of depth 8: slabs 0..3
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("slab index 4 outside 0..3"));
    sound_header(h);
    h.z_begin = 9, h.z_end = 17, h.stored_z_begin = 8;  // not where slab 1 of depth 8 is
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("corrupt header: plane range"));
    sound_header(h);
    h.stored_z_begin = 9;  // above the first owned plane
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("corrupt header: plane range"));
    sound_header(h);
    h.stored_z_begin = -1;
    write_raw_slab(path, h, kSoundFileBytes);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("corrupt header: plane range"));
}

TEST_CASE("a reader keeps the shape it validated when the header changes under its mapping") {
    TempShmDir dir;
    const std::string path = dir.file("k.slab1");
    SlabMapping writer = SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 1, 1), "density");
    const auto reader = SlabMapping::open_read_only(path);
    writer.header_rw().nx = 1 << 30;  // a hostile writer, after the reader's check
    writer.header_rw().data_bytes = 0;
    CHECK(reader.dims() == kDims);
    CHECK(reader.value_count() == 16u * 8 * 9);
    CHECK(reader.geometry().stored_z_begin == 7);
}

TEST_CASE("descriptor sizes beyond 2^20, and a huge slab depth, are refused (they wrapped to empty output)") {
    for (const char* dims : {"[4294967296, 8, 8]", "[8, 1099511627776, 8]", "[8, 8, 2147483648]", "[8, 8, 1048577]"})
        CHECK_THROWS_WITH(parse_descriptor(base_descriptor(dims, "8", "[]"), "d.slabcast"),
                          Catch::Contains("d.slabcast: dims") && Catch::Contains("each size must be 1..1048576"));
    // nz = 2^31 with a depth of 2^31 - 1 made one slab whose plane loop ran until memory ran out.
    CHECK_THROWS_WITH(parse_descriptor(base_descriptor("[8, 8, 2147483648]", "2147483647", "[]"), "d"),
                      Catch::Contains("each size must be 1..1048576"));
    CHECK_THROWS_WITH(parse_descriptor(base_descriptor("[8, 8, 64]", "2147483647", "[]"), "d"),
                      Catch::Contains("slab depth 2147483647 must be 1..1048576"));
    CHECK(parse_descriptor(base_descriptor("[1048576, 1048576, 1048576]", "1048576", "[]"), "d").dims.nx == 1 << 20);
}

TEST_CASE("a descriptor's slab files are plain names in its directory") {
    for (const char* file : {"../../etc/passwd", "/etc/passwd", "/dev/shm/slabcast/c.slab0", "sub/c.slab0", "..", ".",
                             "", "c.slab0\\u0000x", "a\\nb"}) {
        const std::string slabs = std::string(R"([{"index": 0, "file": ")") + file + R"("}])";
        CHECK_THROWS_WITH(parse_descriptor(base_descriptor("[8, 8, 16]", "8", slabs), "d.slabcast"),
                          Catch::Contains("d.slabcast: slab 0's file") &&
                              Catch::Contains("must be a plain file name in the descriptor's directory"));
    }
    const Descriptor d = parse_descriptor(base_descriptor("[8, 8, 16]", "8", R"([{"index": 1, "file": "..c.slab1"}])"), "d");
    CHECK(d.slabs.at(0).file == "..c.slab1");  // a name that merely starts with dots stays in the directory
}

TEST_CASE("opening a slab never leaves the directory: a symbolic link, a FIFO, a name with '/' are refused") {
    TempShmDir dir, outside;
    SlabMapping::create(outside.file("planted.slab0"), kDims, 8, slab_geometry(kDims, 8, 0, 1), "density");
    std::filesystem::create_symlink(outside.file("planted.slab0"), dir.file("v.slab0"));
    const int fd = ::open(dir.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(fd, "v.slab0", dir.file("v.slab0")),
                      Catch::Contains(dir.file("v.slab0")) && Catch::Contains("symbolic link; refused"));
    CHECK_THROWS_WITH(SlabMapping::open_read_only(fd, "../" + name_of(outside.path) + "/planted.slab0", "x"),
                      Catch::Contains("leads outside its directory"));
    REQUIRE(::mkfifo(dir.file("f.slab0").c_str(), 0600) == 0);
    CHECK_THROWS_WITH(SlabMapping::open_read_only(fd, "f.slab0", "f"), Catch::Contains("not a regular file"));
    ::close(fd);
}

TEST_CASE("a receiver reshaping a slab replaces the file; a reader keeps its old mapping intact") {
    TempShmDir dir;
    const std::string path = dir.file("r.slab1");
    {
        SlabMapping w = SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 1, 1), "density");
        for (std::size_t i = 0; i < w.value_count(); ++i) w.values_rw(0)[i] = 3.f;
    }
    const auto reader = SlabMapping::open_read_only(path);
    const Dims other{16, 8, 64};
    SlabMapping reshaped = SlabMapping::create(path, other, 8, slab_geometry(other, 8, 1, 1), "density");
    // It used to truncate the same inode: the reader read zeros, or died of SIGBUS past the new end.
    CHECK(reader.not_truncated());
    CHECK(reader.values(0)[0] == 3.f);
    CHECK(reader.values(0)[reader.value_count() - 1] == 3.f);
    CHECK(reader.header().nz == 32);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK(static_cast<unsigned long long>(st.st_ino) == reshaped.inode());
    CHECK(reshaped.inode() != reader.inode());
    CHECK(SlabMapping::open_read_only(path).dims() == other);
    // No temporary file is left beside it.
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator{}) == 1);
}

TEST_CASE("a slab cut short under a reader's mapping is told by pread and fstat, never by touching its pages") {
    TempShmDir dir;
    const std::string path = dir.file("t.slab1");
    {
        SlabMapping w = SlabMapping::create(path, kDims, 8, slab_geometry(kDims, 8, 1, 1), "density");
        w.header_rw().live.generation.store(7);
    }
    const auto reader = SlabMapping::open_read_only(path);
    SlabHeader h{};
    CHECK(reader.read_header(h));
    CHECK(h.live.generation.load() == 7);
    CHECK(reader.not_truncated());
    std::filesystem::resize_file(path, 4096 + 100);  // values cut: a read past the new end would be SIGBUS
    CHECK_FALSE(reader.not_truncated());
    CHECK(reader.read_header(h));
    std::filesystem::resize_file(path, 100);  // below the header: so would a read of the header
    CHECK_FALSE(reader.not_truncated());
    CHECK_FALSE(reader.read_header(h));
    CHECK_THROWS_WITH(SlabMapping::open_read_only(path), Catch::Contains("truncated: 100 bytes"));
}

TEST_CASE("dataset sizes beyond 2^20 an axis are refused: the step size would wrap") {
    TempShmDir dir;
    write_text(dir.file("dataset.json"), R"({"name":"d","field":"rho","dtype":"float32","dims":[4294967296,4294967296,16],)"
                                         R"("steps":[{"step":0,"file":"a.raw"}]})");
    CHECK_THROWS_WITH(read_dataset(dir.path), Catch::Contains("dataset.json: dims") && Catch::Contains("1..1048576"));
}

TEST_CASE("a descriptor is written through a file of its own, never through a symbolic link planted beside it") {
    TempShmDir dir;
    const std::string victim = dir.file("victim");
    write_text(victim, "precious");
    const std::string path = dir.file("v.slabcast");
    std::filesystem::create_symlink(victim, path + ".tmp-" + std::to_string(::getpid()));
    std::filesystem::create_symlink(victim, path + ".tmp");  // the name it used to write through
    Descriptor d;
    d.name = "v";
    d.dims = kDims;
    d.slab_depth = 8;
    d.slabs = {{0, "v.slab0"}};
    write_descriptor(path, d);
    std::ifstream in(victim);
    std::string text;
    std::getline(in, text);
    CHECK(text == "precious");
    CHECK(read_descriptor(path).slabs.at(0).file == "v.slab0");
    CHECK_FALSE(std::filesystem::is_symlink(path));
}

TEST_CASE("a JSON file that is a FIFO or too large is refused by name, without hanging") {
    TempShmDir dir;
    const std::string fifo = dir.file("f.slabcast");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(read_descriptor(fifo), Catch::Contains(fifo) && Catch::Contains("not a regular file"));
    const std::string big = dir.file("big.slabcast");
    { std::ofstream(big) << "{}"; }
    std::filesystem::resize_file(big, (64u << 20) + 1);
    CHECK_THROWS_WITH(read_descriptor(big), Catch::Contains(big) && Catch::Contains("more than the 64 MiB"));
}
