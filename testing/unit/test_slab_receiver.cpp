// The receiver's core against real shared memory: placement, every bad-packet
// class with its counter, duplicates, stale packets and loss accounting.
#include "receive/slab_receiver.h"
#include "temp_shm_dir.h"

#include "slabcast/quad_packet.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace slabcast;

namespace {

const Dims kDims{8, 4, 12};  // 3 slabs of depth 4, one ghost plane
constexpr int kDepth = 4;

struct Packet {
    std::vector<std::uint8_t> bytes;
    Packet(int batch, const std::vector<quad::Record>& records) : bytes(quad::packet_bytes(static_cast<int>(records.size()))) {
        quad::write_header(bytes.data(), batch, static_cast<int>(records.size()));
        for (std::size_t i = 0; i < records.size(); ++i) quad::write_record(bytes.data(), static_cast<int>(i), records[i]);
    }
};

float value_at(int step, std::int64_t x, std::int64_t y, std::int64_t z) {
    return static_cast<float>(step * 1000 + volume_offset(kDims, x, y, z));
}

// All records of slab k's stored planes for `step`, in scan order, cut into packets of `per`.
std::vector<Packet> slab_packets(int step, const SlabGeometry& g, int per) {
    std::vector<quad::Record> all;
    for (std::int64_t z = g.stored_z_begin; z < g.z_end; ++z)
        for (int y = 0; y < kDims.ny; ++y)
            for (int x = 0; x < kDims.nx; ++x)
                all.push_back({x, y, static_cast<int>(z), value_at(step, x, y, z)});
    std::vector<Packet> out;
    for (std::size_t i = 0; i < all.size(); i += per)
        out.emplace_back(step, std::vector<quad::Record>(all.begin() + i, all.begin() + std::min(all.size(), i + per)));
    return out;
}

struct Fixture {
    TempShmDir dir;
    SlabGeometry geometry = slab_geometry(kDims, kDepth, 1, 1);  // planes 3..7, owned 4..7
    SlabMapping slab = SlabMapping::create(dir.file("t.slab1"), kDims, kDepth, geometry, "density");
    std::vector<StepReport> reports;
    SlabReceiver receiver{1, slab, [this](const StepReport& r) { reports.push_back(r); }};
    std::int64_t now = 1'000'000'000;

    PacketVerdict send(const Packet& p) { return receiver.handle(p.bytes.data(), p.bytes.size(), now); }
    bool slab_is_all(float v) const {
        for (std::size_t i = 0; i < slab.value_count(); ++i)
            if (slab.values()[i] != v) return false;
        return true;
    }
};

}  // namespace

TEST_CASE_METHOD(Fixture, "a whole step lands at the right offsets and completes") {
    for (const auto& p : slab_packets(3, geometry, 7)) CHECK(send(p) == PacketVerdict::Stored);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].step == 3);
    CHECK(reports[0].complete);
    CHECK(reports[0].records == 8 * 4 * 4);
    CHECK(reports[0].ghost_records == 8 * 4);
    CHECK(reports[0].loss_percent() == 0);
    for (std::int64_t z = geometry.stored_z_begin; z < geometry.z_end; ++z)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 8; ++x) CHECK(slab.values()[slab_offset(kDims, geometry, x, y, z)] == value_at(3, x, y, z));
    const SlabLive& live = slab.header().live;
    CHECK(live.last_step == 3);
    CHECK(live.last_step_complete == 1);
    CHECK(live.generation == 2);  // started, finished
}

TEST_CASE_METHOD(Fixture, "every malformed packet is counted as rejected and writes nothing") {
    const std::vector<std::uint8_t> too_short = {1, 0, 0, 0};
    receiver.handle(too_short.data(), too_short.size(), now);

    Packet bad_length(1, {{0, 0, 4, 1.f}, {1, 0, 4, 1.f}});
    receiver.handle(bad_length.bytes.data(), bad_length.bytes.size() - 3, now);

    std::vector<std::uint8_t> zero(8, 0);  // n = 0
    receiver.handle(zero.data(), zero.size(), now);

    std::vector<std::uint8_t> too_many(quad::packet_bytes(561), 0);
    quad::write_header(too_many.data(), 1, 561);
    receiver.handle(too_many.data(), too_many.size(), now);

    // Coordinates outside this stream's stored planes 3..7, each axis, both sides;
    // one bad record spoils the packet even when the others are fine.
    const std::vector<quad::Record> outside = {{8, 0, 4, 9.f}, {-1, 0, 4, 9.f}, {0, 4, 4, 9.f}, {0, -1, 4, 9.f},
                                               {0, 0, 2, 9.f}, {0, 0, 8, 9.f},  {0, 0, -5, 9.f}, {0, 0, 1 << 30, 9.f}};
    for (const auto& r : outside) CHECK(send(Packet(1, {{0, 0, 4, 9.f}, r})) == PacketVerdict::Rejected);

    CHECK(send(Packet(-2, {{0, 0, 4, 9.f}})) == PacketVerdict::Rejected);  // negative step

    CHECK(receiver.total_rejected() == 4 + outside.size() + 1);
    CHECK(receiver.total_packets() == 0);
    CHECK(slab.header().live.rejected == 0);  // published per batch
    receiver.publish();
    CHECK(slab.header().live.rejected == receiver.total_rejected());
    CHECK(slab_is_all(0.f));
    CHECK(slab.header().live.step == -1);  // a rejected packet starts no step
}

TEST_CASE_METHOD(Fixture, "packets that are almost a scan-order run are stored value by value, or rejected whole") {
    // Rows of 8 values; the stored planes are 3..7. A run from (6,3,3) crosses a row and a plane.
    std::vector<quad::Record> records;
    for (int i = 0; i < 6; ++i) records.push_back({(6 + i) % 8, i < 2 ? 3 : 0, i < 2 ? 3 : 4, 10.0f + i});
    CHECK(send(Packet(0, records)) == PacketVerdict::Stored);
    CHECK(receiver.current().records == 4);  // (0..3,0,4) owned; (6..7,3,3) ghost
    CHECK(receiver.current().ghost_records == 2);
    CHECK(slab.values()[slab_offset(kDims, geometry, 7, 3, 3)] == 11.0f);
    CHECK(slab.values()[slab_offset(kDims, geometry, 3, 0, 4)] == 15.0f);

    // One record out of sequence but inside: every value still lands where its coordinates say.
    std::vector<quad::Record> skewed{{0, 1, 5, 1.0f}, {1, 1, 5, 2.0f}, {5, 2, 6, 3.0f}, {3, 1, 5, 4.0f}};
    CHECK(send(Packet(0, skewed)) == PacketVerdict::Stored);
    CHECK(slab.values()[slab_offset(kDims, geometry, 5, 2, 6)] == 3.0f);
    CHECK(slab.values()[slab_offset(kDims, geometry, 3, 1, 5)] == 4.0f);
    CHECK(slab.values()[slab_offset(kDims, geometry, 2, 1, 5)] == 0.0f);

    // x = 8 is the next row's first offset, but outside: the packet is rejected.
    const std::vector<float> before(slab.values(), slab.values() + slab.value_count());
    CHECK(send(Packet(0, {{7, 0, 6, 1.0f}, {8, 0, 6, 2.0f}})) == PacketVerdict::Rejected);
    // A run that walks off the last stored plane (7) is rejected whole.
    CHECK(send(Packet(0, {{7, 3, 7, 1.0f}, {0, 0, 8, 2.0f}})) == PacketVerdict::Rejected);
    CHECK(std::equal(before.begin(), before.end(), slab.values()));
}

TEST_CASE_METHOD(Fixture, "duplicates are counted, not double-counted as records") {
    const auto packets = slab_packets(0, geometry, 16);
    send(packets[2]);
    send(packets[2]);
    send(packets[3]);
    CHECK(receiver.current().records + receiver.current().ghost_records == 32);
    CHECK(receiver.current().duplicates == 16);
}

TEST_CASE_METHOD(Fixture, "loss equals the records that never came") {
    const auto packets = slab_packets(5, geometry, 10);
    std::uint64_t skipped_owned = 0;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        if (i % 3 == 1) {
            quad::Header h{};
            quad::parse_header(packets[i].bytes.data(), packets[i].bytes.size(), h);
            for (int k = 0; k < h.n; ++k) skipped_owned += quad::read_record(packets[i].bytes.data(), k).z >= 4;
            continue;
        }
        send(packets[i]);
    }
    receiver.finish_current();
    REQUIRE(reports.size() == 1);
    CHECK_FALSE(reports[0].complete);
    CHECK(reports[0].records == 128 - skipped_owned);
    CHECK(reports[0].loss_percent() == Approx(100.0 * skipped_owned / 128));
    CHECK(slab.header().live.last_step_loss_ppm == static_cast<std::uint32_t>(reports[0].loss_percent() * 1e4));
}

TEST_CASE_METHOD(Fixture, "a new step ends the old one; late packets of the old one are stale") {
    const auto step4 = slab_packets(4, geometry, 10);
    const auto step5 = slab_packets(5, geometry, 10);
    send(step4[0]);
    CHECK(send(step5[0]) == PacketVerdict::Stored);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].step == 4);
    CHECK_FALSE(reports[0].complete);
    now += 50'000'000;  // 50 ms into step 5: step 4 packets are late
    CHECK(send(step4[1]) == PacketVerdict::Stale);
    CHECK(receiver.total_stale() == 1);
    CHECK(slab.values()[slab_offset(kDims, geometry, 2, 1, 3)] == 0.f);  // the stale packet wrote nothing
    // Long after, an earlier step number means the controller looped back to it.
    now += 1'000'000'000;
    CHECK(send(step4[1]) == PacketVerdict::Stored);
    CHECK(receiver.current().step == 4);
}

TEST_CASE("the top owned plane is mirrored into the next slab's ghost plane") {
    TempShmDir dir;
    const auto g1 = slab_geometry(kDims, kDepth, 1, 1);
    const auto g2 = slab_geometry(kDims, kDepth, 2, 1);
    SlabMapping s1 = SlabMapping::create(dir.file("m.slab1"), kDims, kDepth, g1, "density");
    SlabMapping s2 = SlabMapping::create(dir.file("m.slab2"), kDims, kDepth, g2, "density");
    SlabReceiver r1(1, s1, nullptr);
    r1.mirror_top_plane_to(s2.values_rw());
    for (const auto& p : slab_packets(0, g1, 32)) r1.handle(p.bytes.data(), p.bytes.size(), 0);
    for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 8; ++x) CHECK(s2.values()[slab_offset(kDims, g2, x, y, 7)] == value_at(0, x, y, 7));
    CHECK(s2.values()[slab_offset(kDims, g2, 0, 0, 8)] == 0.f);  // owned planes of slab 2 untouched
}

TEST_CASE_METHOD(Fixture, "a controller looping over the steps comes back to step 0 without loss") {
    // Steps 0..2 follow each other quickly; the loop returns to 0 while step 2
    // is young, but step 0 was replaced long before: not stale.
    for (int step = 0; step < 3; ++step) {
        for (const auto& p : slab_packets(step, geometry, 64)) CHECK(send(p) == PacketVerdict::Stored);
        now += 300'000'000;
    }
    now -= 299'000'000;  // 1 ms into step 2 the loop restarts
    CHECK(send(slab_packets(1, geometry, 64)[1]) == PacketVerdict::Stale);  // step 1: replaced 1 ms ago
    for (const auto& p : slab_packets(0, geometry, 64)) CHECK(send(p) == PacketVerdict::Stored);
    REQUIRE(reports.size() == 4);
    CHECK(reports[3].step == 0);
    CHECK(reports[3].complete);
}

TEST_CASE_METHOD(Fixture, "a short loop comes back to a step within the stale window, from its first packet") {
    // Steps 0 and 1 alternate every 10 ms: step 0 was replaced 10 ms ago when
    // it comes back, but it comes back from the start of the slab.
    for (int round = 0; round < 3; ++round)
        for (int step = 0; step < 2; ++step) {
            for (const auto& p : slab_packets(step, geometry, 16)) CHECK(send(p) == PacketVerdict::Stored);
            now += 10'000'000;
        }
    REQUIRE(reports.size() == 6);
    for (const auto& r : reports) CHECK(r.complete);
}
