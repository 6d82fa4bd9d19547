#include "receive/stream_watch.h"
#include "slabcast/slab_file.h"

#include <catch2/catch.hpp>

using slabcast::StreamWatch;

namespace {
constexpr std::int64_t kSecond = 1'000'000'000;

// Three streams; `packets` and steps begun per stream at one status tick.
std::vector<StreamWatch::Sample> tick(std::vector<std::pair<std::uint64_t, std::uint64_t>> per_stream) {
    std::vector<StreamWatch::Sample> out;
    for (std::size_t k = 0; k < per_stream.size(); ++k)
        out.push_back({static_cast<int>(k), per_stream[k].first, per_stream[k].second});
    return out;
}
}  // namespace

TEST_CASE("a stream that stops while the others begin new steps is missing, then back") {
    StreamWatch w(2 * kSecond);
    w.update(tick({{10, 1}, {10, 1}, {10, 1}}), 0);
    // Stream 2's shuffler dies; 0 and 1 begin step 2 at t=1 s.
    CHECK(w.update(tick({{20, 2}, {20, 2}, {10, 1}}), 1 * kSecond).missing.empty());
    CHECK(w.update(tick({{30, 2}, {30, 2}, {10, 1}}), 2 * kSecond).missing.empty());  // step began 1 s ago
    const auto changes = w.update(tick({{40, 2}, {40, 2}, {10, 1}}), 3 * kSecond);
    CHECK(changes.missing == std::vector<int>{2});
    CHECK(w.missing() == std::set<int>{2});
    CHECK(w.update(tick({{40, 2}, {40, 2}, {10, 1}}), 4 * kSecond).missing.empty());  // reported once
    const auto back = w.update(tick({{40, 2}, {40, 2}, {11, 2}}), 5 * kSecond);
    CHECK(back.back == std::vector<int>{2});
    CHECK(w.missing().empty());
}

TEST_CASE("streams idle together between steps are not missing") {
    StreamWatch w(2 * kSecond);
    w.update(tick({{10, 1}, {10, 1}, {10, 1}}), 0);
    for (int t = 1; t < 10; ++t) CHECK(w.update(tick({{10, 1}, {10, 1}, {10, 1}}), t * kSecond).missing.empty());
    // The controller's next step reaches stream 0 a moment before the others.
    CHECK(w.update(tick({{20, 2}, {10, 1}, {10, 1}}), 10 * kSecond).missing.empty());
    CHECK(w.update(tick({{30, 2}, {20, 2}, {20, 2}}), 11 * kSecond).missing.empty());
    CHECK(w.update(tick({{40, 2}, {30, 2}, {30, 2}}), 14 * kSecond).missing.empty());
}

TEST_CASE("a stream silent from the start is missing once the others have begun a step") {
    StreamWatch w(2 * kSecond);
    w.update(tick({{0, 0}, {0, 0}}), 0);
    w.update(tick({{5, 1}, {0, 0}}), 1 * kSecond);
    CHECK(w.update(tick({{9, 1}, {0, 0}}), 2 * kSecond).missing.empty());
    CHECK(w.update(tick({{9, 1}, {0, 0}}), 3 * kSecond).missing == std::vector<int>{1});
}

TEST_CASE("a stream is missing even while the others begin a step at every tick") {
    StreamWatch w(2 * kSecond);
    std::vector<int> missing;
    for (std::uint64_t t = 0; t < 6; ++t) {
        const auto c = w.update(tick({{10 * t, t}, {10 * t, t}, {0, 0}}), static_cast<std::int64_t>(t) * kSecond);
        missing.insert(missing.end(), c.missing.begin(), c.missing.end());
    }
    CHECK(missing == std::vector<int>{2});
}

// The receiver feeds the watch its slabs' generation counters, which count a
// step's end as well as its start. In a 1024^3 demo the streams ended a step
// up to a second apart and then waited 10-20 s for the next one to be staged:
// fed those counters as steps begun, the watch called 15-17 healthy streams
// MISSING after every step.
TEST_CASE("a stream finishing its step after the others does not make them missing") {
    using slabcast::steps_begun;
    CHECK(steps_begun(0) == 0);  // no step yet
    CHECK(steps_begun(1) == 1);  // writing the first
    CHECK(steps_begun(2) == 1);  // it ended
    CHECK(steps_begun(3) == 2);  // the next began
    StreamWatch w(2 * kSecond);
    auto at = [](std::uint64_t packets, std::uint64_t generation) {
        return std::pair<std::uint64_t, std::uint64_t>{packets, steps_begun(generation)};
    };
    w.update(tick({at(10, 1), at(10, 1), at(10, 1)}), 0);  // all three writing step 0
    w.update(tick({at(20, 2), at(20, 2), at(15, 1)}), 1 * kSecond);  // 0 and 1 end it; 2 still writing
    std::vector<int> missing;
    w.update(tick({at(20, 2), at(20, 2), at(20, 2)}), 2 * kSecond);  // 2 ends it a second later
    for (int t = 3; t < 20; ++t) {  // all idle while the next step is staged
        const auto c = w.update(tick({at(20, 2), at(20, 2), at(20, 2)}), t * kSecond);
        missing.insert(missing.end(), c.missing.begin(), c.missing.end());
    }
    CHECK(missing.empty());
    CHECK(w.missing().empty());
}
