// The recording on disk: what it lists reads back bit for bit; the budget keeps
// the newest steps; a run that stopped anywhere leaves nothing listed that is
// not whole, and the next run removes what it left and goes on.
#include "record/recording_ring.h"

#include "slabcast/dataset.h"
#include "slabcast/step_file.h"

#include "temp_shm_dir.h"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

using namespace slabcast;

namespace {

const Dims kDims{16, 12, 10};

Dataset shape() {
    Dataset s;
    s.name = "vol";
    s.field = "rho";
    s.dims = kDims;
    s.spacing[2] = 2;
    return s;
}

struct Step {
    std::vector<float> values;
    std::vector<std::uint8_t> ages;
    StepToRecord record(int number) const {
        return {number, values.data(), ages.data(), RecordedStep{100, 120, 20, false, 1000 + number, 0}};
    }
};

Step make_step(int seed) {
    Step s;
    const auto n = static_cast<std::size_t>(kDims.count());
    for (std::size_t i = 0; i < n; ++i) {
        s.values.push_back(static_cast<float>(i % 97) * 0.25f + static_cast<float>(seed));
        s.ages.push_back(static_cast<std::uint8_t>((i / 50 + seed) % 3 == 0 ? 255 : 0));
    }
    return s;
}

void check_step(const Dataset& d, const DatasetStep& s, const Step& expected) {
    std::vector<float> v(expected.values.size());
    std::vector<std::uint8_t> a(expected.ages.size());
    read_step_planes(d.step_path(s), s.codec, d.dims, sizeof(float), 0, d.dims.nz, v.data());
    read_step_planes(d.directory + "/" + s.ages, s.codec, d.dims, 1, 0, d.dims.nz, a.data());
    CHECK(v == expected.values);
    CHECK(a == expected.ages);
}

std::set<std::string> files_in(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
}

std::set<std::string> listed_files(const Dataset& d) {
    std::set<std::string> names{"dataset.json"};
    for (const auto& s : d.steps) names.insert({s.file, s.ages});
    return names;
}

}  // namespace

TEST_CASE("a recording lists each step it wrote, and it reads back bit for bit") {
    TempShmDir dir;
    for (StepCodec codec : {StepCodec::Lz4, StepCodec::None}) {
        CAPTURE(to_string(codec));
        const std::string out = dir.file(to_string(codec));
        const Step a = make_step(1), b = make_step(2);
        {
            RecordingRing ring(out, shape(), "src.slabcast", 4, codec, 0);
            CHECK(read_dataset(out, true).steps.empty());
            CHECK(ring.add(a.record(5)) == RecordingRing::Result::Recorded);
            CHECK(ring.add(b.record(6)) == RecordingRing::Result::Recorded);
        }
        const Dataset d = read_dataset(out);
        REQUIRE(d.steps.size() == 2);
        CHECK(d.steps[0].number == 5);
        CHECK(d.steps[0].codec == codec);
        REQUIRE(d.steps[1].recorded);
        CHECK(d.steps[1].recorded->published_ns == 1006);
        CHECK(d.steps[1].recorded->holes == 20);
        CHECK(d.steps[1].recorded->stored_bytes > 0);
        CHECK(d.spacing[2] == 2);
        REQUIRE(d.recording);
        CHECK(d.recording->source == "src.slabcast");
        CHECK(d.recording->steps_recorded == 2);
        check_step(d, d.steps[0], a);
        check_step(d, d.steps[1], b);
        CHECK(files_in(out) == listed_files(d));
    }
}

// VmSize of this process, bytes.
std::uint64_t address_space() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
    return 0;
}

TEST_CASE("a step file that fails for any reason leaves no part file") {
    // The LZ4 encoder's buffers (4 MiB blocks for an 8 MiB step) cannot be
    // had: an error that is not the system's (std::bad_alloc or an LZ4
    // error), where a full disk is one. In a child process, whose memory the
    // test runner does not share: its address space capped, and every free
    // piece of its heap of 64 KiB taken but the last 256 KiB, which the
    // small allocations before the part file is made still find.
    TempShmDir dir;
    const std::string out = dir.file("rec");
    Dataset big = shape();
    big.dims = Dims{256, 256, 32};
    const auto n = static_cast<std::size_t>(big.dims.count());
    std::vector<float> values(n, 1.5f);
    std::vector<std::uint8_t> ages(n, 0);
    RecordingRing ring(out, big, "src.slabcast", 32, StepCodec::Lz4, 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const rlimit limit{address_space() + (1u << 20), address_space() + (1u << 20)};
        int code = ::setrlimit(RLIMIT_AS, &limit) == 0 ? 0 : 10;
        std::vector<void*> taken;
        taken.reserve(1u << 16);
        while (taken.size() < taken.capacity())
            if (void* p = std::malloc(64u << 10)) taken.push_back(p);
            else break;
        for (int i = 0; i < 4 && !taken.empty(); ++i) {
            std::free(taken.back());
            taken.pop_back();
        }
        try {
            ring.add({7, values.data(), ages.data(), RecordedStep{}});
            code = code ? code : 11;  // the write went through: nothing was tested
        } catch (const std::runtime_error& e) {
            // Named by the part file it was writing: the step file failed, not what came before.
            if (!code && std::string(e.what()).find(".part: ") == std::string::npos) code = 14;
        } catch (...) {
            code = code ? code : 12;  // an error the recorder would not name
        }
        for (const auto& e : std::filesystem::directory_iterator(out))
            if (e.path().extension() == ".part") code = code ? code : 13;
        ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    // 10: no limit set; 11: the write went through; 12: not a runtime_error;
    // 13: a part file was left; 14: it failed before the step file.
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(read_dataset(out, true).steps.empty());
}

TEST_CASE("with a budget the ring keeps the newest steps that fit") {
    TempShmDir dir;
    const std::uint64_t step_bytes = static_cast<std::uint64_t>(kDims.count()) * 5;
    RecordingRing ring(dir.path + "/r", shape(), "s", 4, StepCodec::None, 3 * step_bytes + step_bytes / 2);
    for (int i = 0; i < 8; ++i) REQUIRE(ring.add(make_step(i).record(i)) == RecordingRing::Result::Recorded);
    const Dataset d = read_dataset(dir.path + "/r");
    REQUIRE(d.steps.size() == 3);
    CHECK(d.steps.front().number == 5);
    CHECK(d.steps.back().number == 7);
    CHECK(d.recording->steps_evicted == 5);
    CHECK(d.recording->steps_recorded == 8);
    CHECK(ring.stored_bytes() == 3 * step_bytes);
    CHECK(files_in(dir.path + "/r") == listed_files(d));
    check_step(d, d.steps.front(), make_step(5));
}

TEST_CASE("a step heard again replaces its older recording") {
    TempShmDir dir;
    RecordingRing ring(dir.path, shape(), "s", 4, StepCodec::Lz4, 0);
    ring.add(make_step(1).record(0));
    ring.add(make_step(2).record(1));
    ring.add(make_step(3).record(0));
    const Dataset d = read_dataset(dir.path);
    REQUIRE(d.steps.size() == 2);
    CHECK(d.steps[0].number == 1);
    CHECK(d.steps[1].number == 0);
    check_step(d, d.steps[1], make_step(3));
    CHECK(files_in(dir.path) == listed_files(d));
}

TEST_CASE("the next run removes what a stopped run left unlisted and goes on") {
    TempShmDir dir;
    const std::string out = dir.path + "/r";
    {
        RecordingRing ring(out, shape(), "s", 4, StepCodec::Lz4, 0);
        ring.add(make_step(1).record(1));
        ring.count_skipped(2);
        ring.flush();
    }
    // A run killed mid-step: a file half written, and one written whole but
    // never listed (killed between its rename and the list).
    std::ofstream(out + "/step_000002-00000001.raw.lz4.part") << "half";
    std::ofstream(out + "/step_000002-00000001.age.lz4") << "whole but unlisted";
    std::ofstream(out + "/dataset.json.tmp-4242") << "{";
    {
        RecordingRing ring(out, shape(), "s", 4, StepCodec::Lz4, 0);
        CHECK(files_in(out) == listed_files(read_dataset(out)));
        ring.add(make_step(3).record(3));
    }
    const Dataset d = read_dataset(out);
    REQUIRE(d.steps.size() == 2);
    CHECK(d.recording->steps_skipped == 2);
    CHECK(d.recording->steps_recorded == 2);
    check_step(d, d.steps[0], make_step(1));
    check_step(d, d.steps[1], make_step(3));
    CHECK(files_in(out) == listed_files(d));

    // A listed step whose files were deleted by hand is left out, not read.
    std::filesystem::remove(out + "/" + d.steps[0].file);
    RecordingRing again(out, shape(), "s", 4, StepCodec::Lz4, 0);
    REQUIRE(again.dataset().steps.size() == 1);
    CHECK(again.dataset().steps[0].number == 3);
}

TEST_CASE("a recording refuses a directory that is not one of its volume") {
    TempShmDir dir;
    std::ofstream(dir.file("notes.txt")) << "mine";
    CHECK_THROWS_WITH(RecordingRing(dir.path, shape(), "s", 4, StepCodec::Lz4, 0),
                      Catch::Contains("holds 'notes.txt' and no recording"));
    std::filesystem::remove(dir.file("notes.txt"));
    std::ofstream(dir.file("dataset.json"))
        << R"({"name":"d","field":"rho","dtype":"float32","dims":[16,12,10],"steps":[{"step":0,"file":"a.raw"}]})";
    CHECK_THROWS_WITH(RecordingRing(dir.path, shape(), "s", 4, StepCodec::Lz4, 0),
                      Catch::Contains("holds a dataset, not a recording"));
    std::filesystem::remove(dir.file("dataset.json"));
    { RecordingRing ring(dir.path, shape(), "s", 4, StepCodec::Lz4, 0); }
    Dataset other = shape();
    other.dims = Dims{16, 12, 11};
    CHECK_THROWS_WITH(RecordingRing(dir.path, other, "s", 4, StepCodec::Lz4, 0),
                      Catch::Contains("16x12x10") && Catch::Contains("16x12x11"));
}
