// A staged step is named by a (spoofable) sync packet: only a plain, regular
// file of the right size inside the staging directory may be opened. Staging
// slots are allocated once and reused: a shuffler maps each slot once, and the
// stager never rewrites a slot while a shuffler sends from it.
#include "stage/staged_step.h"
#include "stage/staging_ring.h"
#include "stage/step_copier.h"
#include "temp_shm_dir.h"

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

using namespace slabcast;

namespace {

void write_bytes(const std::string& path, std::size_t n, char c = 'x') {
    std::ofstream(path, std::ios::binary) << std::string(n, c);
}

// Stages `source` as `file` into a slot the ring gives, copying it when needed;
// returns whether it was copied.
bool stage(StagingRing& ring, const std::string& source, const std::string& file, std::uint64_t bytes) {
    const SourceStamp stamp = stamp_of(source);
    const std::optional<StagingRing::Claim> claim = ring.claim(file, stamp);
    REQUIRE(claim);
    if (!claim->holds_step) {
        StepCopier copy(source, ring.fd(claim->slot), bytes, false);
        REQUIRE(copy.advance(bytes));
    }
    ring.publish(claim->slot, file, stamp);
    return !claim->holds_step;
}

char first_byte(const StagedStep* step) { return reinterpret_cast<const char*>(step->values())[0]; }

}  // namespace

TEST_CASE("a staged step must be a regular file, not a link out of the staging directory") {
    TempShmDir outside, staging;
    write_bytes(outside.file("secret"), 64);
    write_bytes(staging.file("step_00000.raw"), 64);
    REQUIRE(::symlink(outside.file("secret").c_str(), staging.file("step_00001.raw").c_str()) == 0);
    REQUIRE(::symlink("step_00000.raw", staging.file("step_00002.raw").c_str()) == 0);  // even one that stays inside
    REQUIRE(::mkfifo(staging.file("step_00003.raw").c_str(), 0600) == 0);

    StagedSteps steps;
    std::string problem;
    CHECK(steps.hold(staging.file("step_00000.raw"), 64, problem) != nullptr);
    for (const char* name : {"step_00001.raw", "step_00002.raw"}) {
        problem.clear();
        CHECK(steps.hold(staging.file(name), 64, problem) == nullptr);
        CHECK_THAT(problem, Catch::Contains("is a symbolic link; refused"));
    }
    problem.clear();
    CHECK(steps.hold(staging.file("step_00003.raw"), 64, problem) == nullptr);  // returns, does not hang
    CHECK_THAT(problem, Catch::Contains("not a regular file"));
    problem.clear();
    CHECK(steps.hold(staging.file("step_00000.raw"), 65, problem) == nullptr);
    CHECK_THAT(problem, Catch::Contains("64 bytes, expected 65"));
}

TEST_CASE("a staging slot is reused step after step, mapped once, and never rewritten while it is sent from") {
    constexpr std::uint64_t kBytes = 8192;
    TempShmDir sources, staging;
    write_bytes(sources.file("a.raw"), kBytes, 'a');
    write_bytes(sources.file("b.raw"), kBytes, 'b');
    StagingRing ring(take_staging_directory(staging.path), staging.path, kBytes, 1);
    StagedSteps shuffler;
    std::string problem;

    CHECK(stage(ring, sources.file("a.raw"), "step_0.raw", kBytes));
    const StagedStep* sending = shuffler.hold(staging.file("step_0.raw"), kBytes, problem);
    REQUIRE(sending);
    CHECK(first_byte(sending) == 'a');
    CHECK(sending->prefaulted_end() == 0);
    sending->prefault(0, kBytes / 2);  // a step cut short: half of it mapped
    CHECK(sending->prefaulted_end() == kBytes / 2);

    // The controller moved past step 0: its name goes, but the one slot is
    // still being sent from, so the stager may not rewrite it yet.
    ring.unpublish(0);
    CHECK_FALSE(ring.claim("step_1.raw", stamp_of(sources.file("b.raw"))));
    CHECK(first_byte(sending) == 'a');

    shuffler.release();
    CHECK(stage(ring, sources.file("b.raw"), "step_1.raw", kBytes));
    CHECK(ring.slots() == 1);
    CHECK(::access(staging.file("step_0.raw").c_str(), F_OK) != 0);
    sending = shuffler.hold(staging.file("step_1.raw"), kBytes, problem);
    REQUIRE(sending);
    CHECK(first_byte(sending) == 'b');
    CHECK(sending->prefaulted_end() == kBytes / 2);  // the same mapping: what was mapped stays mapped
    sending->prefault(kBytes / 2, kBytes);
    CHECK(sending->prefaulted_end() == kBytes);
    CHECK(shuffler.mapped() == 1);

    // The next lap: the slot still holds step 1, unchanged at its source: no copy.
    shuffler.release();
    ring.unpublish(0);
    CHECK_FALSE(stage(ring, sources.file("b.raw"), "step_1.raw", kBytes));
    // A source rewritten since is copied again.
    shuffler.release();
    ring.unpublish(0);
    const timeval later[2] = {{1, 0}, {2, 0}};
    REQUIRE(::utimes(sources.file("b.raw").c_str(), later) == 0);
    CHECK(stage(ring, sources.file("b.raw"), "step_1.raw", kBytes));
}

TEST_CASE("one stager a staging directory; a stopped stager's slots are removed, and the ring's own at its end") {
    TempShmDir staging;
    write_bytes(staging.file(".slot-3"), 64);  // left by a stager that was killed
    {
        StagingRing ring(take_staging_directory(staging.path), staging.path, 64, 2);
        CHECK(::access(staging.file(".slot-3").c_str(), F_OK) != 0);
        CHECK_THROWS_WITH(take_staging_directory(staging.path),
                          Catch::Contains("another `slabcast stage` is using this staging directory"));
        REQUIRE(ring.claim("step_0.raw", SourceStamp{}));
        CHECK(::access(staging.file(".slot-0").c_str(), F_OK) == 0);
    }
    CHECK(::access(staging.file(".slot-0").c_str(), F_OK) != 0);
    CHECK_NOTHROW(take_staging_directory(staging.path));  // free again once the stager has gone
}
