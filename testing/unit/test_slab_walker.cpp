#include "shuffle/slab_walker.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <tuple>
#include <vector>

using namespace slabcast;

namespace {

// Walks a whole slab and returns the coordinates in order, checking each value.
std::vector<std::tuple<int, int, int>> walk(const Dims& d, std::int64_t z0, std::int64_t z1, SendOrder order,
                                            int* packets = nullptr) {
    std::vector<float> volume(static_cast<std::size_t>(d.count()));
    for (std::size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<float>(i);
    SlabWalker w(d, z0, z1, order);
    std::vector<std::uint8_t> p(quad::kMaxPacketBytes);
    std::vector<std::tuple<int, int, int>> out;
    int count = 0;
    while (int n = w.fill(p.data(), volume.data())) {
        ++count;
        for (int i = 0; i < n; ++i) {
            const auto r = quad::read_record(p.data(), i);
            REQUIRE(r.v == static_cast<float>(volume_offset(d, r.x, r.y, r.z)));
            out.emplace_back(r.x, r.y, r.z);
        }
    }
    if (packets) *packets = count;
    return out;
}

}  // namespace

TEST_CASE("scan order sends every value of the slab once, x fastest") {
    const Dims d{37, 5, 20};
    int packets = 0;
    const auto coords = walk(d, 3, 11, SendOrder::Scan, &packets);
    REQUIRE(coords.size() == 37u * 5 * 8);
    CHECK(packets == static_cast<int>((coords.size() + 559) / 560));
    for (std::size_t i = 0; i < coords.size(); ++i) {
        const auto [x, y, z] = coords[i];
        CHECK(volume_offset(d, x, y, z) == static_cast<std::int64_t>(3 * 37 * 5 + i));
    }
}

TEST_CASE("morton order covers a non-cubic slab exactly once, in z-order") {
    const Dims d{12, 7, 30};
    const auto coords = walk(d, 9, 14, SendOrder::Morton);
    std::set<std::tuple<int, int, int>> unique(coords.begin(), coords.end());
    CHECK(coords.size() == 12u * 7 * 5);
    CHECK(unique.size() == coords.size());
    for (const auto& [x, y, z] : coords) {
        CHECK(x < 12);
        CHECK(y < 7);
        CHECK((z >= 9 && z < 14));
    }
    // The first 8 points form the first 2x2x2 cell, x varying fastest.
    CHECK(coords[0] == std::make_tuple(0, 0, 9));
    CHECK(coords[1] == std::make_tuple(1, 0, 9));
    CHECK(coords[2] == std::make_tuple(0, 1, 9));
    CHECK(coords[4] == std::make_tuple(0, 0, 10));
}

TEST_CASE("a walker restarts from the beginning after reset") {
    const Dims d{8, 8, 8};
    std::vector<float> volume(512, 1.f);
    SlabWalker w(d, 0, 8, SendOrder::Scan);
    std::vector<std::uint8_t> p(quad::kMaxPacketBytes);
    CHECK(w.fill(p.data(), volume.data()) == 512);
    CHECK(w.fill(p.data(), volume.data()) == 0);
    w.reset();
    CHECK(w.fill(p.data(), volume.data()) == 512);
    CHECK(parse_send_order("morton") == SendOrder::Morton);
    CHECK_THROWS_WITH(parse_send_order("random"), Catch::Contains("expected scan or morton"));
}

TEST_CASE("run packets cover the slab once, in order, 2233 values at most, and need scan order") {
    const Dims d{100, 30, 12};
    std::vector<float> volume(static_cast<std::size_t>(d.count()));
    for (std::size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<float>(i);
    SlabWalker w(d, 3, 8, SendOrder::Scan, WireFormat::Run);  // planes 3..7
    CHECK(w.total_packets() == (5 * 3000 + 2232) / 2233);
    std::vector<std::uint8_t> p(run::kMaxPacketBytes);
    std::int64_t next = 3 * d.plane();
    std::uint64_t packets = 0;
    for (;;) {
        const run::RunEncoder::Packet packet = w.fill_run(p.data(), volume.data(), 9, 1);
        const int n = packet.count;
        if (n == 0) break;
        CHECK(packet.bytes == run::packet_bytes(n));
        run::Header h;
        REQUIRE(run::parse_header(p.data(), packet.bytes, h) == run::ParseResult::Ok);
        CHECK((h.step == 9 && h.slab == 1 && h.count == n));
        CHECK(volume_offset(d, h.x, h.y, h.z) == next);
        CHECK(n <= run::kMaxValues);
        std::vector<float> got(static_cast<std::size_t>(n));
        std::memcpy(got.data(), run::payload(p.data()), got.size() * 4);
        for (int i = 0; i < n; ++i) REQUIRE(got[static_cast<std::size_t>(i)] == static_cast<float>(next + i));
        next += n;
        ++packets;
    }
    CHECK(next == 8 * d.plane());
    CHECK(packets == w.total_packets());
    CHECK_THROWS_WITH(SlabWalker(d, 0, 8, SendOrder::Morton, WireFormat::Run), Catch::Contains("scan order only"));
    CHECK(parse_wire_format("run") == WireFormat::Run);
    CHECK_THROWS_WITH(parse_wire_format("zip"), Catch::Contains("expected quad or run"));
}
