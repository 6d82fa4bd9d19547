// A staged step is named by a (spoofable) sync packet: only a plain, regular
// file of the right size inside the staging directory may be opened.
#include "stage/staged_step.h"
#include "temp_shm_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

using slabcast::StagedStep;

namespace {

void write_bytes(const std::string& path, std::size_t n) {
    std::ofstream(path, std::ios::binary) << std::string(n, 'x');
}

}  // namespace

TEST_CASE("a staged step must be a regular file, not a link out of the staging directory") {
    TempShmDir outside, staging;
    write_bytes(outside.file("secret"), 64);
    write_bytes(staging.file("step_00000.raw"), 64);
    REQUIRE(::symlink(outside.file("secret").c_str(), staging.file("step_00001.raw").c_str()) == 0);
    REQUIRE(::symlink("step_00000.raw", staging.file("step_00002.raw").c_str()) == 0);  // even one that stays inside
    REQUIRE(::mkfifo(staging.file("step_00003.raw").c_str(), 0600) == 0);

    std::string problem;
    CHECK(StagedStep::open(staging.file("step_00000.raw"), 64, problem).valid());
    for (const char* name : {"step_00001.raw", "step_00002.raw"}) {
        problem.clear();
        CHECK_FALSE(StagedStep::open(staging.file(name), 64, problem).valid());
        CHECK_THAT(problem, Catch::Contains("is a symbolic link; refused"));
    }
    problem.clear();
    CHECK_FALSE(StagedStep::open(staging.file("step_00003.raw"), 64, problem).valid());  // returns, does not hang
    CHECK_THAT(problem, Catch::Contains("not a regular file"));
    problem.clear();
    CHECK_FALSE(StagedStep::open(staging.file("step_00000.raw"), 65, problem).valid());
    CHECK_THAT(problem, Catch::Contains("64 bytes, expected 65"));
}
