// A replay's schedule: the recording's steps in arrival order, each at its
// recorded distance from the first over the speed.
#include "replay/replay_steps.h"

#include <catch2/catch.hpp>

using namespace slabcast;

namespace {

DatasetStep recorded(int number, std::int64_t published_ns) {
    DatasetStep s;
    s.number = number;
    s.file = "s" + std::to_string(number);
    s.recorded = RecordedStep{};
    s.recorded->published_ns = published_ns;
    return s;
}

}  // namespace

TEST_CASE("a replay keeps the recorded pace, scaled by the speed") {
    Dataset d;
    d.directory = "rec";
    d.steps = {recorded(4, 1'000'000'000), recorded(5, 1'250'000'000), recorded(6, 2'000'000'000),
               recorded(4, 1'900'000'000)};  // heard again, its time out of order: never before the one ahead
    const auto at1 = replay_schedule(d, 1);
    REQUIRE(at1.size() == 4);
    CHECK(at1[0].step->number == 4);
    CHECK(at1[0].offset_ns == 0);
    CHECK(at1[1].offset_ns == 250'000'000);
    CHECK(at1[2].offset_ns == 1'000'000'000);
    CHECK(at1[3].offset_ns == 1'000'000'000);
    const auto at2 = replay_schedule(d, 2);
    CHECK(at2[1].offset_ns == 125'000'000);
    CHECK(at2[2].offset_ns == 500'000'000);
    for (const auto& r : replay_schedule(d, 0)) CHECK(r.offset_ns == 0);

    DatasetStep plain;
    plain.number = 9;
    plain.file = "p";
    d.steps.push_back(plain);
    CHECK_THROWS_WITH(replay_schedule(d, 1), Catch::Contains("step 9 has no recorded time") &&
                                                 Catch::Contains("--speed max"));
    CHECK(replay_schedule(d, 0).size() == 5);
}

TEST_CASE("a replay sends each step when the receiver began it, where the recording saw that") {
    Dataset d;
    d.directory = "rec";
    d.steps = {recorded(0, 1'600'000'000), recorded(1, 2'100'000'000), recorded(2, 3'900'000'000)};
    const std::int64_t began[] = {1'000'000'000, 1'500'000'000, 2'000'000'000};
    for (int i = 0; i < 3; ++i) d.steps[static_cast<std::size_t>(i)].recorded->started_ns = began[i];
    const auto s = replay_schedule(d, 1);
    CHECK(s[1].offset_ns == 500'000'000);
    CHECK(s[2].offset_ns == 1'000'000'000);
    // One step whose beginning was not seen: the publications pace them all.
    d.steps[1].recorded->started_ns = 0;
    CHECK(replay_schedule(d, 1)[2].offset_ns == 2'300'000'000);
}

TEST_CASE("a replay's speed is max or a positive number") {
    CHECK(parse_replay_speed("max") == 0);
    CHECK(parse_replay_speed("1") == 1);
    CHECK(parse_replay_speed("2.5") == 2.5);
    for (const char* bad : {"0", "-1", "fast", "1x", "nan", "inf", ""})
        CHECK_THROWS_WITH(parse_replay_speed(bad), Catch::Contains("expected max or a number above 0"));
}
