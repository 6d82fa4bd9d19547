// The receiver's core against real shared memory: placement, every bad-packet
// class with its counter, duplicates, stale packets and loss accounting; each
// step written into a buffer of its own and published whole, holes filled
// from the step before with their age, pinned buffers left alone.
#include "receive/slab_receiver.h"
#include "temp_shm_dir.h"

#include "slabcast/publication.h"
#include "slabcast/quad_packet.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
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
    void send_all(const std::vector<Packet>& packets, std::size_t skip = SIZE_MAX) {
        for (std::size_t i = 0; i < packets.size(); ++i)
            if (i != skip) send(packets[i]);
    }
    bool slab_is_all(float v) const {
        for (int b = 0; b < slab.buffers(); ++b)
            for (std::size_t i = 0; i < slab.value_count(); ++i)
                if (slab.values(b)[i] != v) return false;
        return true;
    }
    // The newest publication's buffer, and the step being written.
    int shown_buffer() const { return newest_publication(slab)->buffer; }
    const float* shown() const { return slab.values(shown_buffer()); }
    const std::uint8_t* shown_ages() const { return slab.ages(shown_buffer()); }
    const float* writing() const { return slab.values(slab.header().live.writing_buffer); }
    std::int64_t at(std::int64_t x, std::int64_t y, std::int64_t z) const { return slab_offset(kDims, geometry, x, y, z); }
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
            for (int x = 0; x < 8; ++x) CHECK(shown()[at(x, y, z)] == value_at(3, x, y, z));
    const SlabLive& live = slab.header().live;
    CHECK(live.last_step == 3);
    CHECK(live.last_step_complete == 1);
    CHECK(live.generation == 2);  // started, finished
    CHECK(live.publications == 1);
    CHECK(live.writing_buffer == -1);
    const auto p = newest_publication(slab);
    REQUIRE(p);
    CHECK(p->step == 3);
    CHECK(p->complete);
    CHECK(p->records == p->expected);
    CHECK(p->holes == 0);
    CHECK(p->buffer == reports[0].buffer);
    CHECK(std::all_of(shown_ages(), shown_ages() + slab.value_count(), [](std::uint8_t a) { return a == 0; }));
}

TEST_CASE_METHOD(Fixture, "a publication carries its owned and ghost planes' ranges, measured as they were placed") {
    auto packets = slab_packets(3, geometry, 7);
    // A NaN is left out of a range, as VTK leaves it out.
    quad::Record nan = quad::read_record(packets[20].bytes.data(), 0);
    REQUIRE(nan.z >= 4);
    nan.v = std::nanf("");
    quad::write_record(packets[20].bytes.data(), 0, nan);
    send_all(packets);
    auto p = newest_publication(slab);
    REQUIRE(p);
    CHECK(p->owned_range.known == 1);
    CHECK(p->owned_range.lo == value_at(3, 0, 0, 4));
    CHECK(p->owned_range.hi == value_at(3, 7, 3, 7));
    CHECK(p->owned_range.age_lo == 0);
    CHECK(p->owned_range.age_hi == 0);
    CHECK(p->ghost_range.known == 1);
    CHECK(p->ghost_range.lo == value_at(3, 0, 0, 3));
    CHECK(p->ghost_range.hi == value_at(3, 7, 3, 3));

    SECTION("an infinity: not measured, the reader reads it") {
        auto next = slab_packets(4, geometry, 7);
        quad::Record inf = quad::read_record(next[20].bytes.data(), 1);
        inf.v = -std::numeric_limits<float>::infinity();
        quad::write_record(next[20].bytes.data(), 1, inf);
        send_all(next);
        p = newest_publication(slab);
        CHECK(p->step == 4);
        CHECK(p->owned_range.known == 0);
        CHECK(p->ghost_range.known == 1);
    }
    SECTION("a lost owned value: filled from the step before, so not measured; the ghost plane measured as filled") {
        send_all(slab_packets(4, geometry, 8), 0);  // the ghost plane's first row lost
        receiver.finish_current();
        p = newest_publication(slab);
        CHECK(p->step == 4);
        CHECK(p->owned_range.known == 1);  // every owned value came
        CHECK(p->ghost_range.known == 1);
        CHECK(p->ghost_range.lo == value_at(3, 0, 0, 3));  // step 3's row
        CHECK(p->ghost_range.hi == value_at(4, 7, 3, 3));
        CHECK(p->ghost_range.age_lo == 0);
        CHECK(p->ghost_range.age_hi == 1);
        send_all(slab_packets(5, geometry, 8), 10);  // an owned row lost
        receiver.finish_current();
        p = newest_publication(slab);
        CHECK(p->step == 5);
        CHECK(p->owned_range.known == 0);
    }
    SECTION("a value placed twice may have changed: not measured") {
        auto next = slab_packets(4, geometry, 8);
        send(next[10]);
        send_all(next);
        p = newest_publication(slab);
        CHECK(p->step == 4);
        CHECK(p->owned_range.known == 0);
    }
    SECTION("a record of an older publication is never taken for this one") {
        SlabHeader& h = slab.header_rw();
        h.ranges[p->buffer].seq -= 2;
        CHECK(newest_publication(slab)->owned_range.known == 0);
    }
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
    receiver.post_counters();
    CHECK(slab.header().live.rejected == receiver.total_rejected());
    CHECK(slab_is_all(0.f));
    CHECK(slab.header().live.step == -1);  // a rejected packet starts no step
}

TEST_CASE_METHOD(Fixture, "packets that are almost runs of rows are stored value by value, or rejected whole") {
    // Rows of 8 values; the stored planes are 3..7. A run from (6,3,3) crosses a row and a plane.
    std::vector<quad::Record> records;
    for (int i = 0; i < 6; ++i) records.push_back({(6 + i) % 8, i < 2 ? 3 : 0, i < 2 ? 3 : 4, 10.0f + i});
    CHECK(send(Packet(0, records)) == PacketVerdict::Stored);
    CHECK(receiver.current().records == 4);  // (0..3,0,4) owned; (6..7,3,3) ghost
    CHECK(receiver.current().ghost_records == 2);
    CHECK(writing()[at(7, 3, 3)] == 11.0f);
    CHECK(writing()[at(3, 0, 4)] == 15.0f);

    // Rows in another order (the progressive order's): each piece lands as a block.
    CHECK(send(Packet(0, {{6, 2, 6, 7.0f}, {7, 2, 6, 8.0f}, {0, 3, 4, 9.0f}, {1, 3, 4, 10.0f}})) == PacketVerdict::Stored);
    CHECK(writing()[at(7, 2, 6)] == 8.0f);
    CHECK(writing()[at(1, 3, 4)] == 10.0f);

    // One record out of sequence but inside: every value still lands where its coordinates say.
    std::vector<quad::Record> skewed{{0, 1, 5, 1.0f}, {1, 1, 5, 2.0f}, {5, 2, 6, 3.0f}, {3, 1, 5, 4.0f}};
    CHECK(send(Packet(0, skewed)) == PacketVerdict::Stored);
    CHECK(writing()[at(5, 2, 6)] == 3.0f);
    CHECK(writing()[at(3, 1, 5)] == 4.0f);
    CHECK(writing()[at(2, 1, 5)] == 0.0f);

    // x = 8 is the next row's first offset, but outside: the packet is rejected.
    const std::vector<float> before(writing(), writing() + slab.value_count());
    CHECK(send(Packet(0, {{7, 0, 6, 1.0f}, {8, 0, 6, 2.0f}})) == PacketVerdict::Rejected);
    // A run that walks off the last stored plane (7) is rejected whole.
    CHECK(send(Packet(0, {{7, 3, 7, 1.0f}, {0, 0, 8, 2.0f}})) == PacketVerdict::Rejected);
    CHECK(std::equal(before.begin(), before.end(), writing()));
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
    // Published all the same, its holes marked: no earlier step to fill them from.
    CHECK(reports[0].holes == skipped_owned);
    const auto p = newest_publication(slab);
    REQUIRE(p);
    CHECK(p->holes == skipped_owned);
    CHECK_FALSE(p->complete);
    std::uint64_t never = 0;
    for (std::size_t i = 0; i < slab.value_count(); ++i) never += shown_ages()[i] == kAgeNeverArrived;
    CHECK(never >= skipped_owned);
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
    CHECK(writing()[at(2, 1, 3)] == 0.f);  // the stale packet wrote nothing
    CHECK(shown()[at(2, 1, 3)] == 0.f);
    // Long after, an earlier step number means the controller looped back to it.
    now += 1'000'000'000;
    CHECK(send(step4[1]) == PacketVerdict::Stored);
    CHECK(receiver.current().step == 4);
}

TEST_CASE("the top owned plane goes to the next slab's ghost plane when the step is published, in either order") {
    TempShmDir dir;
    const auto g1 = slab_geometry(kDims, kDepth, 1, 1);
    const auto g2 = slab_geometry(kDims, kDepth, 2, 1);
    SlabMapping s1 = SlabMapping::create(dir.file("m.slab1"), kDims, kDepth, g1, "density");
    SlabMapping s2 = SlabMapping::create(dir.file("m.slab2"), kDims, kDepth, g2, "density");
    SlabReceiver r1(1, s1, nullptr), r2(2, s2, nullptr);
    r1.hand_top_plane_to(&r2.ghost_handoff());
    r2.expect_ghost_handoff();
    // Owned planes only, as from a sender that sends no ghost plane.
    auto owned = [](int step, const SlabGeometry& g) {
        auto all = slab_packets(step, g, 8);  // 8 values: one row per packet, a plane is 4 packets
        return std::vector<Packet>(all.begin() + 4, all.end());
    };
    auto check_ghost = [&](int step) {
        const auto p = newest_publication(s2);
        REQUIRE(p);
        CHECK(p->step == step);
        // The plane handed over is measured as it is published.
        CHECK(p->ghost_range.known == 1);
        CHECK(p->ghost_range.lo == value_at(step, 0, 0, 7));
        CHECK(p->ghost_range.hi == value_at(step, 7, 3, 7));
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 8; ++x) {
                CHECK(s2.values(p->buffer)[slab_offset(kDims, g2, x, y, 7)] == value_at(step, x, y, 7));
                CHECK(s2.ages(p->buffer)[slab_offset(kDims, g2, x, y, 7)] == 0);
            }
    };
    // Slab 1 first: slab 2 has the plane when its own planes are complete.
    for (const auto& p : slab_packets(0, g1, 32)) r1.handle(p.bytes.data(), p.bytes.size(), 0);
    for (const auto& p : owned(0, g2)) r2.handle(p.bytes.data(), p.bytes.size(), 0);
    check_ghost(0);
    // Slab 2 first: it waits for the plane (no publication), and publishes once it comes.
    for (const auto& p : owned(1, g2)) r2.handle(p.bytes.data(), p.bytes.size(), 0);
    CHECK(newest_publication(s2)->step == 0);
    r2.tick(1'000'000);
    CHECK(newest_publication(s2)->step == 0);
    for (const auto& p : slab_packets(1, g1, 32)) r1.handle(p.bytes.data(), p.bytes.size(), 0);
    r2.tick(2'000'000);
    check_ghost(1);
}

TEST_CASE_METHOD(Fixture, "a published step never changes while the next one is written") {
    send_all(slab_packets(1, geometry, 16));
    const int one = shown_buffer();
    const auto packets = slab_packets(2, geometry, 16);
    for (std::size_t i = 0; i < packets.size() / 2; ++i) send(packets[i]);
    CHECK(slab.header().live.writing_buffer != one);
    CHECK(newest_publication(slab)->step == 1);
    for (std::int64_t z = geometry.stored_z_begin; z < geometry.z_end; ++z)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 8; ++x) REQUIRE(slab.values(one)[at(x, y, z)] == value_at(1, x, y, z));
}

TEST_CASE_METHOD(Fixture, "holes take the previous step's values and age; a whole step after them is all new") {
    const auto step = [this](int s) { return slab_packets(s, geometry, 8); };  // 8 values a packet: one row
    send_all(step(1));
    send_all(step(2), 9);  // row y=1 of plane 5 lost
    receiver.finish_current();
    const auto p2 = newest_publication(slab);
    REQUIRE(p2);
    CHECK(p2->step == 2);
    CHECK(p2->holes == 8);
    CHECK(p2->records == p2->expected - 8);
    for (int x = 0; x < 8; ++x) {
        CHECK(shown()[at(x, 1, 5)] == value_at(1, x, 1, 5));
        CHECK(shown_ages()[at(x, 1, 5)] == 1);
        CHECK(shown_ages()[at(x, 2, 5)] == 0);
        CHECK(shown()[at(x, 2, 5)] == value_at(2, x, 2, 5));
    }
    send_all(step(3), 9);  // lost again: two steps old
    receiver.finish_current();
    CHECK(newest_publication(slab)->step == 3);
    CHECK(shown()[at(3, 1, 5)] == value_at(1, 3, 1, 5));
    CHECK(shown_ages()[at(3, 1, 5)] == 2);
    send_all(step(4));
    CHECK(newest_publication(slab)->complete);
    CHECK(std::all_of(shown_ages(), shown_ages() + slab.value_count(), [](std::uint8_t a) { return a == 0; }));
}

TEST_CASE_METHOD(Fixture, "whole steps into buffers whose ages are all 0 write no age byte") {
    // The first use of each buffer clears its ages (what a fresh or re-attached
    // slab holds there is unknown); after that a whole step costs nothing.
    for (int s = 0; s < slab.buffers(); ++s) send_all(slab_packets(s, geometry, 16));
    const std::uint64_t before = receiver.holes().age_bytes_written();
    for (int s = 10; s < 20; ++s) send_all(slab_packets(s, geometry, 16));
    CHECK(receiver.holes().age_bytes_written() == before);
    send_all(slab_packets(20, geometry, 16), 3);  // one lost packet: its chunk only
    receiver.finish_current();
    CHECK(receiver.holes().age_bytes_written() == before + slab.value_count());  // the one 4096-value chunk, whole
}

TEST_CASE_METHOD(Fixture, "a buffer a reader pins is never taken; with every buffer in use the step is dropped") {
    auto reader = std::make_shared<const SlabMapping>(SlabMapping::open_read_only(dir.file("t.slab1")));
    std::vector<PinnedPublicationPtr> pins;
    for (int s = 1; s <= 3; ++s) {
        send_all(slab_packets(s, geometry, 16));
        pins.push_back(pin_publication(reader, *newest_publication(*reader)));
        REQUIRE(pins.back());
    }
    const std::vector<float> step1(reader->values(pins[0]->publication().buffer),
                                   reader->values(pins[0]->publication().buffer) + slab.value_count());
    // Step 4: 1, 2 and the newest (3) are pinned.
    const auto four = slab_packets(4, geometry, 16);
    for (const auto& p : four) CHECK(send(p) == PacketVerdict::Dropped);
    CHECK(slab.header().live.dropped_steps == 1);
    CHECK(slab.header().live.dropped_packets == four.size());
    receiver.finish_current();
    REQUIRE(reports.size() == 4);
    CHECK(reports[3].dropped);
    CHECK(reports[3].dropped_because.find("pinned by readers") != std::string::npos);
    CHECK(slab.header().live.last_step == 3);  // the last published step, not the dropped one
    CHECK(slab.header().live.last_step_loss_ppm == 0);
    CHECK(newest_publication(slab)->step == 3);
    CHECK(std::equal(step1.begin(), step1.end(), reader->values(pins[0]->publication().buffer)));
    // The reader lets go of step 1: step 5 goes there.
    const int freed = pins[0]->publication().buffer;
    pins.erase(pins.begin());
    now += 1'000'000'000;
    send_all(slab_packets(5, geometry, 16));
    CHECK(newest_publication(slab)->step == 5);
    CHECK(newest_publication(slab)->buffer == freed);
}

TEST_CASE_METHOD(Fixture, "a step with no packet for the step timeout is published as it is") {
    const auto packets = slab_packets(7, geometry, 16);
    send(packets[0]);
    receiver.tick(now + 100'000'000);  // 0.1 s: still waiting
    CHECK(reports.empty());
    receiver.tick(now + 600'000'000);  // past the 0.5 s default
    REQUIRE(reports.size() == 1);
    CHECK(newest_publication(slab)->step == 7);
    CHECK_FALSE(newest_publication(slab)->complete);
    // A late packet of it starts nothing.
    now += 700'000'000;
    CHECK(send(packets[1]) == PacketVerdict::Stale);
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

TEST_CASE_METHOD(Fixture, "a short loop whose first packet of a step was lost loses those packets, not the step") {
    // Steps 0..3 every 10 ms, twice; in the second lap step 1's first 5
    // packets are lost (the receiver's socket overflowed), both that start a
    // slab among them: step 1 was replaced 30 ms before, two steps back, so a
    // run of its packets means the sender is at it again.
    constexpr std::size_t kLost = 5;
    for (int lap = 0; lap < 2; ++lap)
        for (int step = 0; step < 4; ++step) {
            // 20 packets of 8 values: 0..3 the ghost plane, 4..19 the owned planes.
            const auto packets = slab_packets(step, geometry, 8);
            const bool lossy = lap == 1 && step == 1;
            for (std::size_t i = lossy ? kLost : 0; i < packets.size(); ++i) send(packets[i]);
            now += 10'000'000;
        }
    REQUIRE(reports.size() == 8);
    for (std::size_t i = 0; i < reports.size(); ++i) {
        INFO("report " << i << ": step " << reports[i].step << ", " << reports[i].records << " records"
                       << (reports[i].complete ? ", complete" : ""));
        CHECK(reports[i].step == static_cast<std::int64_t>(i % 4));
        CHECK(reports[i].duplicates == 0);
        CHECK(reports[i].complete == (i != 5));
    }
    // Packets 0..4 lost, the next 7 taken for late ones, then the step began
    // again: its last 20 - 5 - 7 packets arrived.
    CHECK(receiver.total_stale() == SlabReceiver::kLapPackets - 1);
    CHECK(reports[5].records == 8u * (20 - kLost - (SlabReceiver::kLapPackets - 1)));
}

TEST_CASE_METHOD(Fixture, "a late packet of a step two back, one among the current step's, is stale") {
    const auto step4 = slab_packets(4, geometry, 4), step5 = slab_packets(5, geometry, 4),
               step6 = slab_packets(6, geometry, 4);
    send_all(step4, step4.size() - 1);  // its last packet comes late
    send_all(step5);
    for (std::size_t i = 0; i < step6.size(); ++i) {
        CHECK(send(step6[i]) == PacketVerdict::Stored);
        if (i % 2 == 1 && i < 2 * SlabReceiver::kLapPackets) CHECK(send(step4.back()) == PacketVerdict::Stale);
    }
    REQUIRE(reports.size() == 3);
    CHECK(reports[2].step == 6);
    CHECK(reports[2].complete);
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
