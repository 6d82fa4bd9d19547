// Who pins a slab's buffers, read back from the kernel (slabcast/reader_pins.h):
// this process pins buffers of a real slab file through the reader's own
// calls, and finds itself, with those buffers and their steps, in /proc.
#include "temp_shm_dir.h"

#include "slabcast/publication.h"
#include "slabcast/reader_pins.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <memory>

using namespace slabcast;

namespace {
std::string command_of_self() {
    std::ifstream f("/proc/self/comm");
    std::string c;
    std::getline(f, c);
    return c;
}
}  // namespace

TEST_CASE("a pin is an OFD read lock within the pin bytes; neighbouring pins show as one range") {
    using V = std::vector<int>;
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2051 2051") == V{3});
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2048 2048") == V{0});
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2048 2050") == V{0, 1, 2});
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2063 2063") == V{15});
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2064 2064").empty());  // past kMaxBuffers
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2060 2070").empty());
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2047 2047").empty());
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2050 2049").empty());
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  WRITE -1 00:1b:2 2051 2051").empty());
    CHECK(pinned_buffers_of("lock:\t1: POSIX  ADVISORY  READ 77 00:1b:2 2051 2051").empty());
    CHECK(pinned_buffers_of("lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2051 EOF").empty());
    CHECK(pinned_buffers_of("pos:\t0").empty());
    CHECK(pinned_buffers_of("").empty());
}

TEST_CASE("the readers of a slab are found in /proc with the buffers they pin and the steps in them") {
    TempShmDir dir;
    const Dims dims{4, 4, 4};
    const std::string path = dir.file("v.slab0");
    SlabMapping writer = SlabMapping::create(path, dims, 4, slab_geometry(dims, 4, 0, 1), "density");
    for (std::int64_t step : {7, 8}) {
        const int b = take_buffer(writer);
        REQUIRE(b >= 0);
        publish_buffer(writer, b, PublishInfo{step, 16, 16, 0, true});
    }
    const auto reader = std::make_shared<const SlabMapping>(SlabMapping::open_read_only(path));
    CHECK(readers_of({&writer}).at(path) == "no reader this process can see");

    const auto seven = pin_step(reader, 7);
    const auto eight = pin_step(reader, 8);
    REQUIRE(seven);
    REQUIRE(eight);
    const auto found = readers_pinning({path});
    REQUIRE(found.count(path) == 1);
    REQUIRE(found.at(path).size() == 1);
    const ReaderPins& me = found.at(path).front();
    CHECK(me.pid == ::getpid());
    CHECK(me.command == command_of_self());
    CHECK(me.buffers == std::vector<int>{seven->publication().buffer, eight->publication().buffer});
    CHECK(readers_of({&writer}).at(path) ==
          command_of_self() + "[" + std::to_string(::getpid()) + "] 2 (steps 7, 8)");
}

TEST_CASE("the readers' text names each reader and the steps it pins") {
    const std::vector<long long> step_of{5, -1, 6};
    CHECK(readers_text({{10, "pvbatch", {0, 2}}, {11, "pvpython", {1}}}, step_of) ==
          "pvbatch[10] 2 (steps 5, 6), pvpython[11] 1");
    CHECK(readers_text({{10, "record", {2}}}, step_of) == "record[10] 1 (step 6)");
    CHECK(readers_text({}, step_of) == "no reader this process can see");
}
