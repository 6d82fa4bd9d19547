#include "shuffle/slab_walker.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <utility>
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

// Walks a whole slab in run packets and returns each packet's (first value
// from the slab's first plane, count), checking that the runs cover the slab
// exactly once and that lossless codecs bring every value back.
std::vector<std::pair<std::int64_t, int>> walk_runs(const Dims& d, std::int64_t z0, std::int64_t z1, SendOrder order,
                                                    const std::string& codec, const std::vector<float>& volume) {
    const run::CodecChoice choice = run::parse_codec(codec);
    SlabWalker w(d, z0, z1, order, WireFormat::Run, choice);
    run::RunDecoder decoder;
    std::vector<std::uint8_t> p(run::kMaxPacketBytes);
    std::vector<int> seen(static_cast<std::size_t>((z1 - z0) * d.plane()), 0);
    std::vector<std::pair<std::int64_t, int>> runs;
    for (;;) {
        const run::RunEncoder::Packet packet = w.fill_run(p.data(), volume.data(), 2, 0);
        if (packet.count == 0) break;
        run::Header h;
        REQUIRE(run::parse_header(p.data(), packet.bytes, h) == run::ParseResult::Ok);
        REQUIRE(h.count == packet.count);
        const std::int64_t first = volume_offset(d, h.x, h.y, h.z) - z0 * d.plane();
        REQUIRE((first >= 0 && first + h.count <= static_cast<std::int64_t>(seen.size())));
        const float* values = decoder.decode(h, run::payload(p.data()));
        REQUIRE(values);
        for (int i = 0; i < h.count; ++i) {
            ++seen[static_cast<std::size_t>(first + i)];
            if (choice.codec != run::Codec::Zfp)  // bit for bit (NaNs included)
                REQUIRE(std::memcmp(&values[i], &volume[static_cast<std::size_t>(z0 * d.plane() + first + i)], 4) == 0);
        }
        runs.emplace_back(first, h.count);
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(seen.size()));
    CHECK(runs.size() <= w.total_packets());
    if (choice.codec != run::Codec::Lz4) CHECK(runs.size() == w.total_packets());
    w.reset();
    if (choice.codec != run::Codec::Lz4)  // lz4 guesses a count from the last packet's ratio
        CHECK(w.fill_run(p.data(), volume.data(), 3, 0).count == runs.front().second);
    return runs;
}

std::vector<float> counting_volume(const Dims& d) {
    std::vector<float> volume(static_cast<std::size_t>(d.count()));
    for (std::size_t i = 0; i < volume.size(); ++i) volume[i] = static_cast<float>(i);
    return volume;
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
    CHECK(parse_send_order("progressive") == SendOrder::Progressive);
    CHECK_THROWS_WITH(parse_send_order("random"), Catch::Contains("expected scan, morton or progressive"));
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
    CHECK(parse_wire_format("run") == WireFormat::Run);
    CHECK_THROWS_WITH(parse_wire_format("zip"), Catch::Contains("expected quad or run"));
}

TEST_CASE("run packets in Morton order carry whole rows of a plane, tiles in z-order") {
    const Dims d{100, 30, 12};
    // 22 rows of 100 fit a packet (2233 values): two tiles a plane, 22 and 8 rows.
    const auto runs = walk_runs(d, 3, 8, SendOrder::Morton, "none", counting_volume(d));
    REQUIRE(runs.size() == 10u);
    const std::int64_t plane = d.plane();
    // Morton order over (row group, plane): (0,0), (1,0), (0,1), (1,1), (0,2)...
    CHECK(runs[0] == std::make_pair(std::int64_t{0}, 2200));
    CHECK(runs[1] == std::make_pair(std::int64_t{2200}, 800));
    CHECK(runs[2] == std::make_pair(plane, 2200));
    CHECK(runs[3] == std::make_pair(plane + 2200, 800));
    CHECK(runs[4] == std::make_pair(2 * plane, 2200));
}

TEST_CASE("run packets in Morton order split rows longer than a packet into equal pieces") {
    const Dims d{5000, 3, 4};
    const auto runs = walk_runs(d, 1, 4, SendOrder::Morton, "none", counting_volume(d));
    // Three pieces a row (1667, 1667, 1666), 3 rows, 3 planes.
    CHECK(runs.size() == 27u);
    CHECK(runs[0] == std::make_pair(std::int64_t{0}, 1667));
    CHECK(runs[1] == std::make_pair(std::int64_t{1667}, 1667));  // x piece 1, row 0
    CHECK(runs[2] == std::make_pair(std::int64_t{5000}, 1667));  // x piece 0, row 1
    for (const auto& r : runs) CHECK(r.second <= 1667);
}

TEST_CASE("run packets in Morton order work with every codec") {
    const Dims d{64, 48, 10};
    std::vector<float> smooth(static_cast<std::size_t>(d.count())), noise(smooth.size());
    std::mt19937 random(12345);
    for (std::size_t i = 0; i < smooth.size(); ++i) {
        smooth[i] = static_cast<float>(i % 64) * 0.25f;
        const std::uint32_t bits = random();
        std::memcpy(&noise[i], &bits, sizeof bits);
    }
    // lz4: tiles of up to 8192 values (128 rows of 64: the whole plane); one that does not compress goes raw, in
    // several packets.
    CHECK(walk_runs(d, 2, 9, SendOrder::Morton, "lz4", smooth).size() == 7u);
    CHECK(walk_runs(d, 2, 9, SendOrder::Morton, "lz4", noise).size() == 7u * 2);
    // zfp:8: 8932 values a packet, the whole 3072-value plane.
    CHECK(walk_runs(d, 2, 9, SendOrder::Morton, "zfp:8", smooth).size() == 7u);
    walk_runs(d, 0, 10, SendOrder::Scan, "zfp:12", smooth);
    walk_runs(d, 0, 10, SendOrder::Scan, "lz4", noise);
}

TEST_CASE("a replay's recorded losses: exactly the values that arrived are sent, each once, in any codec") {
    const Dims d{300, 20, 12};
    const std::int64_t z0 = 2, z1 = 10;
    const std::vector<float> volume = counting_volume(d);
    const auto n = static_cast<std::size_t>((z1 - z0) * d.plane());
    std::mt19937 rng(11);
    // Holes as a lossy stream leaves them: runs of lost values, some long, some one value.
    std::vector<std::uint8_t> ages(n, 0);
    for (int k = 0; k < 40; ++k) {
        const std::size_t at = rng() % n, len = 1 + rng() % (k % 4 == 0 ? 5000 : 30);
        std::fill(ages.begin() + static_cast<long>(at), ages.begin() + static_cast<long>(std::min(n, at + len)),
                  static_cast<std::uint8_t>(1 + k % 255));
    }
    ages[0] = 255;
    ages[n - 1] = 3;
    for (const std::string codec : {"none", "lz4", "quant:12"}) {
        CAPTURE(codec);
        SlabWalker w(d, z0, z1, SendOrder::Scan, WireFormat::Run, run::parse_codec(codec));
        w.skip_lost(ages.data());
        run::RunDecoder decoder;
        std::vector<std::uint8_t> p(run::kMaxPacketBytes);
        std::vector<int> seen(n, 0);
        for (;;) {
            const run::RunEncoder::Packet packet = w.fill_run(p.data(), volume.data(), 5, 0);
            if (packet.count == 0) break;
            run::Header h;
            REQUIRE(run::parse_header(p.data(), packet.bytes, h) == run::ParseResult::Ok);
            const std::int64_t first = volume_offset(d, h.x, h.y, h.z) - z0 * d.plane();
            REQUIRE(decoder.decode(h, run::payload(p.data())));
            for (int i = 0; i < h.count; ++i) ++seen[static_cast<std::size_t>(first + i)];
        }
        for (std::size_t i = 0; i < n; ++i) {
            CAPTURE(i);
            REQUIRE(seen[i] == (ages[i] == 0 ? 1 : 0));
        }
        // reset() forgets the losses: the next step sends everything unless told again.
        w.reset();
        std::size_t all = 0;
        while (const int c = w.fill_run(p.data(), volume.data(), 6, 0).count) all += static_cast<std::size_t>(c);
        CHECK(all == n);
    }
    SlabWalker quads(d, z0, z1, SendOrder::Scan);
    CHECK_THROWS_AS(quads.skip_lost(ages.data()), std::logic_error);
    SlabWalker morton(d, z0, z1, SendOrder::Morton, WireFormat::Run);
    CHECK_THROWS_AS(morton.skip_lost(ages.data()), std::logic_error);
}
