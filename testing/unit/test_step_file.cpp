// Step files, raw and LZ4: what is written reads back bit for bit, in whole
// or by planes, and a damaged file is named, never read as data.
#include "slabcast/dataset.h"
#include "slabcast/step_file.h"
#include "slabcast/unique_fd.h"

#include "temp_shm_dir.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <vector>

using namespace slabcast;

namespace {

std::vector<float> smooth_volume(const Dims& d, float phase) {
    std::vector<float> v(static_cast<std::size_t>(d.count()));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> noise(0, 1e-3f);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) * 1e-3f + phase) + noise(rng);
    return v;
}

void write_step(const std::string& path, StepCodec codec, const void* data, std::uint64_t bytes,
                std::uint64_t piece = 1000003) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(fd.valid());
    StepFileWriter w(fd.get(), codec, bytes);
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (std::uint64_t done = 0; done < bytes; done += std::min(piece, bytes - done))
        w.write(p + done, std::min(piece, bytes - done));
    w.finish();
}

std::vector<std::uint8_t> file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void put_bytes(const std::string& path, const std::vector<std::uint8_t>& b) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()),
                                                                 static_cast<std::streamsize>(b.size()));
}

}  // namespace

TEST_CASE("step files read back bit for bit, whole and by planes, raw and LZ4") {
    TempShmDir dir;
    const Dims dims{40, 30, 50};
    const std::vector<float> v = smooth_volume(dims, 0.5f);
    const std::uint64_t bytes = v.size() * sizeof(float);
    for (StepCodec codec : {StepCodec::None, StepCodec::Lz4}) {
        CAPTURE(to_string(codec));
        const std::string path = dir.file("s." + to_string(codec));
        write_step(path, codec, v.data(), bytes);
        std::vector<float> back(v.size());
        read_step_planes(path, codec, dims, sizeof(float), 0, dims.nz, back.data());
        CHECK(std::memcmp(back.data(), v.data(), bytes) == 0);
        for (auto [z0, z1] : {std::pair{0, 1}, {7, 19}, {49, 50}, {13, 13}}) {
            CAPTURE(z0, z1);
            std::vector<float> part(static_cast<std::size_t>((z1 - z0) * dims.plane()) + 1, -1.0f);
            read_step_planes(path, codec, dims, sizeof(float), z0, z1, part.data());
            CHECK(std::memcmp(part.data(), v.data() + z0 * dims.plane(), (part.size() - 1) * sizeof(float)) == 0);
            CHECK(part.back() == -1.0f);  // nothing written past the planes asked for
        }
        CHECK_THROWS_WITH(read_step_planes(path, codec, dims, sizeof(float), 10, 51, back.data()),
                          Catch::Contains("outside 40x30x50"));
    }
    // The frame is the `lz4` tool's: it starts with the LZ4 frame magic.
    const auto lz = file_bytes(dir.file("s.lz4"));
    REQUIRE(lz.size() > 4);
    CHECK((lz[0] == 0x04 && lz[1] == 0x22 && lz[2] == 0x4d && lz[3] == 0x18));
}

TEST_CASE("a damaged step file is named with its problem") {
    TempShmDir dir;
    const Dims dims{32, 32, 32};
    const std::vector<float> v = smooth_volume(dims, 1.5f);
    const std::uint64_t bytes = v.size() * sizeof(float);
    std::vector<float> back(v.size());
    const std::string raw = dir.file("s.raw"), lz = dir.file("s.raw.lz4");
    write_step(raw, StepCodec::None, v.data(), bytes);
    write_step(lz, StepCodec::Lz4, v.data(), bytes);
    const auto good_raw = file_bytes(raw), good_lz = file_bytes(lz);

    SECTION("missing") {
        CHECK_THROWS_WITH(read_step_planes(dir.file("none"), StepCodec::Lz4, dims, 4, 0, 32, back.data()),
                          Catch::Contains("none: cannot open"));
    }
    SECTION("raw, short or long") {
        put_bytes(raw, {good_raw.begin(), good_raw.end() - 4});
        CHECK_THROWS_WITH(read_step_planes(raw, StepCodec::None, dims, 4, 0, 32, back.data()),
                          Catch::Contains("s.raw: shorter"));
        auto longer = good_raw;
        longer.push_back(0);
        put_bytes(raw, longer);
        CHECK_THROWS_WITH(read_step_planes(raw, StepCodec::None, dims, 4, 0, 32, back.data()),
                          Catch::Contains("s.raw: longer"));
    }
    SECTION("LZ4 cut short, at every tenth of its length") {
        for (int tenth = 0; tenth < 10; ++tenth) {
            CAPTURE(tenth);
            put_bytes(lz, {good_lz.begin(), good_lz.begin() + static_cast<long>(good_lz.size() * tenth / 10)});
            CHECK_THROWS_WITH(read_step_planes(lz, StepCodec::Lz4, dims, 4, 0, 32, back.data()),
                              Catch::Contains("s.raw.lz4"));
        }
    }
    SECTION("LZ4 with a byte changed: the checksum or the frame says so") {
        std::mt19937 rng(3);
        for (int i = 0; i < 40; ++i) {
            auto bad = good_lz;
            const std::size_t at = 4 + rng() % (bad.size() - 4);
            bad[at] ^= static_cast<std::uint8_t>(1 + rng() % 255);
            put_bytes(lz, bad);
            CAPTURE(at);
            CHECK_THROWS_WITH(read_step_planes(lz, StepCodec::Lz4, dims, 4, 0, 32, back.data()),
                              Catch::Contains("s.raw.lz4"));
        }
    }
    SECTION("LZ4 with bytes after its frame, or of another size") {
        auto longer = good_lz;
        longer.push_back(7);
        put_bytes(lz, longer);
        CHECK_THROWS_WITH(read_step_planes(lz, StepCodec::Lz4, dims, 4, 0, 32, back.data()),
                          Catch::Contains("after its LZ4 frame"));
        CHECK_THROWS_WITH(read_step_planes(dir.file("s.raw"), StepCodec::Lz4, dims, 4, 0, 32, back.data()),
                          Catch::Contains("LZ4"));
        const Dims smaller{32, 32, 31};
        std::vector<float> fewer(static_cast<std::size_t>(smaller.count()));
        put_bytes(lz, good_lz);
        CHECK_THROWS_WITH(read_step_planes(lz, StepCodec::Lz4, smaller, 4, 0, 31, fewer.data()),
                          Catch::Contains("holds more than"));
        CHECK_THROWS_WITH(read_step_planes(lz, StepCodec::Lz4, smaller, 4, 3, 9, fewer.data()),
                          Catch::Contains("holds more than"));
        const Dims bigger{32, 32, 33};
        std::vector<float> more(static_cast<std::size_t>(bigger.count()));
        put_bytes(lz, good_lz);
        CHECK_THROWS_WITH(read_step_planes(lz, StepCodec::Lz4, bigger, 4, 0, 33, more.data()),
                          Catch::Contains("s.raw.lz4: its LZ4 frame holds fewer"));
    }
}

TEST_CASE("a recording's dataset.json round-trips its steps' ages, codecs and reports") {
    TempShmDir dir;
    Dataset d;
    d.directory = dir.path;
    d.name = "rec";
    d.field = "rho";
    d.dims = Dims{4, 5, 6};
    d.origin[2] = -3;
    d.spacing[0] = 0.5;
    d.recording = RecordingInfo{"/dev/shm/slabcast/x.slabcast", 8, 123, 1 << 20, 9, 2, 1};
    DatasetStep s{7, "a.raw.lz4", StepCodec::Lz4, "a.age.lz4", RecordedStep{90, 120, 30, false, 456, 789}};
    DatasetStep plain;
    plain.number = 3;
    plain.file = "b.raw";
    d.steps = {s, plain};
    write_dataset_descriptor(d, true);
    const Dataset back = read_dataset(dir.path);
    REQUIRE(back.steps.size() == 2);
    CHECK(back.steps[0].codec == StepCodec::Lz4);
    CHECK(back.steps[0].ages == "a.age.lz4");
    REQUIRE(back.steps[0].recorded);
    CHECK(back.steps[0].recorded->holes == 30);
    CHECK(back.steps[0].recorded->published_ns == 456);
    CHECK(!back.steps[0].recorded->complete);
    CHECK(back.steps[1].codec == StepCodec::None);
    CHECK(back.steps[1].ages.empty());
    CHECK(!back.steps[1].recorded);
    CHECK(back.origin[2] == -3);
    CHECK(back.spacing[0] == 0.5);
    REQUIRE(back.recording);
    CHECK(back.recording->steps_skipped == 1);
    CHECK(back.recording->budget_bytes == 1 << 20);

    std::ofstream(dir.file("dataset.json"))
        << R"({"name":"d","field":"rho","dtype":"float32","dims":[2,2,2],)"
        << R"("steps":[{"step":0,"file":"a","codec":"zip"}]})";
    CHECK_THROWS_WITH(read_dataset(dir.path), Catch::Contains("step 0") && Catch::Contains("'zip'"));
    std::ofstream(dir.file("dataset.json"))
        << R"({"name":"d","field":"rho","dtype":"float32","dims":[2,2,2],)"
        << R"("steps":[{"step":0,"file":"a","ages":"../b"}]})";
    CHECK_THROWS_WITH(read_dataset(dir.path), Catch::Contains("plain name"));
    std::ofstream(dir.file("dataset.json"))
        << R"({"name":"d","field":"rho","dtype":"float32","dims":[2,2,2],"spacing":[1,0,1],"steps":[]})";
    CHECK_THROWS_WITH(read_dataset(dir.path, true), Catch::Contains("'spacing' must be positive"));
}
