#include "shuffle/parallel_packer.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace slabcast;

namespace {

// A slab of 37 x 29 values a plane: planes 4..17 of a 20-plane volume, plane 4
// its ghost plane; smooth values with a little noise, so every codec has work.
struct Slab {
    Dims dims{37, 29, 20};
    std::int64_t z_begin = 4, z_end = 18, ghost = 1;
    std::vector<float> volume;
    Slab() : volume(static_cast<std::size_t>(dims.count())) {
        for (std::size_t i = 0; i < volume.size(); ++i)
            volume[i] = static_cast<float>(std::sin(0.01 * static_cast<double>(i)) * 100.0 +
                                           static_cast<double>(i % 7));
    }
    const float* planes() const { return volume.data() + z_begin * dims.plane(); }
    std::size_t values() const { return static_cast<std::size_t>((z_end - z_begin) * dims.plane()); }
    PackerLayout layout(SendOrder order, WireFormat wire, const std::string& codec) const {
        return {dims, z_begin, z_end, ghost, 3, order, wire, run::parse_codec(codec)};
    }
};

struct Taken {
    std::vector<int> seen;  // per value of the slab: how many packets carried it
    std::uint64_t packets = 0, values = 0;
    double worst_error = 0;
};

// Takes every batch of step `step` as a sender would, decodes each packet and
// counts the values it carries, checking each against the slab.
Taken take_all(ParallelPacker& packer, const Slab& s, WireFormat wire, std::int32_t step) {
    Taken t;
    t.seen.assign(s.values(), 0);
    run::RunDecoder decoder;
    while (ParallelPacker::Batch* batch = packer.take()) {
        std::uint64_t values = 0;
        batch->datagrams.for_each_packet([&](const std::uint8_t* p, std::size_t size) {
            ++t.packets;
            auto count = [&](std::int64_t at, float got) {
                const std::int64_t first = s.z_begin * s.dims.plane();
                REQUIRE((at >= first && at < first + static_cast<std::int64_t>(s.values())));
                ++t.seen[static_cast<std::size_t>(at - first)];
                const double error = std::fabs(static_cast<double>(got) - s.volume[static_cast<std::size_t>(at)]);
                t.worst_error = std::max(t.worst_error, error);
                ++values;
                ++t.values;
            };
            if (wire == WireFormat::Quad) {
                quad::Header h;
                REQUIRE(quad::parse_header(p, size, h) == quad::ParseResult::Ok);
                REQUIRE(h.batch == step);
                for (int i = 0; i < h.n; ++i) {
                    const quad::Record r = quad::read_record(p, i);
                    count(volume_offset(s.dims, r.x, r.y, r.z), r.v);
                }
                return;
            }
            run::Header h;
            REQUIRE(run::parse_header(p, size, h) == run::ParseResult::Ok);
            REQUIRE((h.step == step && h.slab == 3));
            const float* got = decoder.decode(h, run::payload(p));
            REQUIRE(got);
            // Progressive packets' values follow the rows' order (checked by
            // the walker's own tests); here only which values and how many.
            if (h.progressive) {
                values += static_cast<std::uint64_t>(h.count);
                t.values += static_cast<std::uint64_t>(h.count);
                return;
            }
            const std::int64_t first = volume_offset(s.dims, h.x, h.y, h.z);
            for (int i = 0; i < h.count; ++i) count(first + i, got[i]);
        });
        CHECK(values == batch->values);
        packer.give_back();
    }
    return t;
}

}  // namespace

TEST_CASE("parallel packing sends every value of the slab once, in each order, wire and codec") {
    const Slab s;
    struct Case {
        SendOrder order;
        WireFormat wire;
        const char* codec;
    };
    const Case cases[] = {{SendOrder::Scan, WireFormat::Run, "none"},
                          {SendOrder::Scan, WireFormat::Run, "lz4"},
                          {SendOrder::Scan, WireFormat::Run, "quant:8"},
                          {SendOrder::Morton, WireFormat::Run, "quant:8"},
                          {SendOrder::Scan, WireFormat::Quad, "none"},
                          {SendOrder::Morton, WireFormat::Quad, "none"}};
    for (const Case& c : cases) {
        for (const int threads : {2, 3, 8}) {
            INFO("order " << static_cast<int>(c.order) << (c.wire == WireFormat::Run ? " run " : " quad ")
                          << c.codec << ", " << threads << " threads");
            ParallelPacker packer(s.layout(c.order, c.wire, c.codec), threads, 5, true);
            CHECK(packer.parts() == threads);
            CHECK(packer.total_values() == s.values());
            packer.begin_step(7, s.planes());
            const Taken t = take_all(packer, s, c.wire, 7);
            CHECK(std::count(t.seen.begin(), t.seen.end(), 1) == static_cast<std::ptrdiff_t>(s.values()));
            // lz4's and quant's packets vary in how many values they hold: the total is at most.
            if (packer.fixed_packet_bytes() == 0) CHECK(t.packets <= packer.total_packets());
            else CHECK(t.packets == packer.total_packets());
            // quant:8 holds half a level of each packet's range (here < 210 wide).
            CHECK(t.worst_error <= (std::string(c.codec) == "quant:8" ? 210.0 / 510 : 0.0));
            CHECK(packer.take() == nullptr);
        }
    }
}

TEST_CASE("parallel packing in progressive order carries every value once") {
    const Slab s;
    ParallelPacker packer(s.layout(SendOrder::Progressive, WireFormat::Run, "quant:10"), 3, 4, false);
    packer.begin_step(1, s.planes());
    const Taken t = take_all(packer, s, WireFormat::Run, 1);
    CHECK(t.values == s.values());
    CHECK(t.packets <= packer.total_packets());
}

TEST_CASE("a step ended part way lets go of its values, and the next starts whole") {
    const Slab s;
    ParallelPacker packer(s.layout(SendOrder::Scan, WireFormat::Run, "quant:8"), 4, 1, true);
    packer.begin_step(1, s.planes());
    REQUIRE(packer.take());
    packer.give_back();
    REQUIRE(packer.take());
    packer.end_step();     // with a batch taken and the parts packing ahead
    packer.give_back();    // the sender hands it back after the step ended: nothing happens
    CHECK(packer.take() == nullptr);  // no step
    packer.begin_step(2, s.planes());
    const Taken t = take_all(packer, s, WireFormat::Run, 2);
    CHECK(std::count(t.seen.begin(), t.seen.end(), 1) == static_cast<std::ptrdiff_t>(s.values()));
    packer.begin_step(3, s.planes());  // and ended by the destructor
}

TEST_CASE("parallel packing takes no more parts than the slab has planes, and 2..32 threads") {
    const Slab s;
    ParallelPacker packer(s.layout(SendOrder::Scan, WireFormat::Run, "none"), 32, 5, true);
    CHECK(packer.parts() == 13);  // 14 planes, the ghost plane with the first part
    CHECK_THROWS_WITH(ParallelPacker(s.layout(SendOrder::Scan, WireFormat::Run, "none"), 1, 5, true),
                      Catch::Contains("expected 2..32"));
    CHECK_THROWS_WITH(ParallelPacker(s.layout(SendOrder::Scan, WireFormat::Run, "none"), 33, 5, true),
                      Catch::Contains("expected 2..32"));
}
