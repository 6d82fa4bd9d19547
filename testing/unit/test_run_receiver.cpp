// Run packets into the receiver's core, against real shared memory: a step
// sent as runs (crossing from the ghost plane into the owned planes) lands
// exactly, run and quad packets mix in one step, duplicates count, every
// codec's runs land, and every run that names another slab, reaches outside
// this one or does not decode is rejected whole.
#include "receive/slab_receiver.h"
#include "temp_shm_dir.h"

#include "slabcast/publication.h"
#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"
#include "slabcast/step_stamp.h"
#include "slabcast/clock.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace slabcast;

namespace {

const Dims kDims{8, 4, 12};  // 3 slabs of depth 4, one ghost plane
constexpr int kDepth = 4;

float value_at(int step, std::int64_t linear) { return static_cast<float>(step * 1000 + linear); }

struct RunFixture {
    TempShmDir dir;
    SlabGeometry geometry = slab_geometry(kDims, kDepth, 1, 1);  // stored planes 3..7, owned 4..7
    SlabMapping slab = SlabMapping::create(dir.file("t.slab1"), kDims, kDepth, geometry, "density");
    std::vector<StepReport> reports;
    SlabReceiver receiver{1, slab, [this](const StepReport& r) { reports.push_back(r); }};
    const std::int64_t stored = static_cast<std::int64_t>(slab.value_count());  // 5 planes of 32

    // Run of `count` values of `step` from stored value `first` (0: the ghost plane's first).
    std::vector<std::uint8_t> run_packet(int step, std::int64_t first, int count, int slab_index = 1) const {
        run::Header h;
        h.step = step;
        h.slab = slab_index;
        const std::int64_t linear = geometry.stored_z_begin * kDims.plane() + first;  // in the volume
        h.x = static_cast<std::int32_t>(linear % kDims.nx);
        h.y = static_cast<std::int32_t>((linear / kDims.nx) % kDims.ny);
        h.z = static_cast<std::int32_t>(linear / kDims.plane());
        h.count = count;
        std::vector<std::uint8_t> p(run::packet_bytes(count));
        float* v = reinterpret_cast<float*>(run::write_header(p.data(), h));
        for (int i = 0; i < count; ++i) v[i] = value_at(step, linear + i);
        return p;
    }
    // The same run through a codec's encoder; `count` is what it fitted.
    std::vector<std::uint8_t> coded_packet(const std::string& codec, int step, std::int64_t first, int& count) const {
        run::RunEncoder e(run::parse_codec(codec));
        std::vector<float> values(static_cast<std::size_t>(stored - first));
        const std::int64_t linear = geometry.stored_z_begin * kDims.plane() + first;
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = value_at(step, linear + static_cast<std::int64_t>(i));
        run::Header h;
        h.step = step;
        h.slab = 1;
        h.x = static_cast<std::int32_t>(linear % kDims.nx);
        h.y = static_cast<std::int32_t>((linear / kDims.nx) % kDims.ny);
        h.z = static_cast<std::int32_t>(linear / kDims.plane());
        std::vector<std::uint8_t> p(run::kMaxPacketBytes);
        const run::RunEncoder::Packet got = e.encode(values.data(), static_cast<std::int64_t>(values.size()), h, p.data());
        p.resize(got.bytes);
        count = got.count;
        return p;
    }
    PacketVerdict send(const std::vector<std::uint8_t>& p, std::int64_t now_ns = 1'000'000'000) {
        return receiver.handle(p.data(), p.size(), now_ns);
    }
    std::vector<std::uint8_t> stamp_packet(int step, std::int64_t sent_ns, int slab_index = 1) const {
        std::vector<std::uint8_t> p(stamp::kBytes);
        stamp::write(p.data(), stamp::StepStamp{step, slab_index, sent_ns});
        return p;
    }
    // The whole of `step` in runs of 50, at monotonic time `now_ns`.
    void send_step(int step, std::int64_t now_ns = 1'000'000'000) {
        for (std::int64_t first = 0; first < stored; first += 50)
            REQUIRE(send(run_packet(step, first, static_cast<int>(std::min<std::int64_t>(50, stored - first))), now_ns) ==
                    PacketVerdict::Stored);
    }
    const float* shown() const { return slab.values(newest_publication(slab)->buffer); }
    bool exact(int step) const {
        const float* v = shown();
        for (std::int64_t i = 0; i < stored; ++i)
            if (v[i] != value_at(step, geometry.stored_z_begin * kDims.plane() + i)) return false;
        return true;
    }
};

}  // namespace

TEST_CASE_METHOD(RunFixture, "a step sent as runs lands exactly, across the ghost plane into the owned ones") {
    for (std::int64_t first = 0; first < stored; first += 50)
        CHECK(send(run_packet(0, first, static_cast<int>(std::min<std::int64_t>(50, stored - first)))) ==
              PacketVerdict::Stored);
    REQUIRE(reports.size() == 1);  // whole: published as it completed
    CHECK(reports[0].records == 128);
    CHECK(reports[0].ghost_records == 32);
    CHECK(reports[0].complete);
    CHECK(reports[0].packets == 4);
    CHECK(exact(0));
    // Each run measured as placed, the one across the ghost plane split
    // between the two parts (slab 1's ghost plane is plane 3: values 96..127).
    const auto p = newest_publication(slab);
    REQUIRE(p);
    CHECK(p->ghost_range.known == 1);
    CHECK(p->ghost_range.lo == value_at(0, 96));
    CHECK(p->ghost_range.hi == value_at(0, 127));
    CHECK(p->owned_range.known == 1);
    CHECK(p->owned_range.lo == value_at(0, 128));
    CHECK(p->owned_range.hi == value_at(0, 255));
}

TEST_CASE_METHOD(RunFixture, "run and quad packets mix in one step; a run sent twice counts as duplicates") {
    // The first 80 values as quad packets in scan order, the rest as one run.
    for (std::int64_t first = 0; first < 80; first += 16) {
        std::vector<std::uint8_t> p(quad::packet_bytes(16));
        quad::write_header(p.data(), 3, 16);
        for (int i = 0; i < 16; ++i) {
            const std::int64_t linear = geometry.stored_z_begin * kDims.plane() + first + i;
            quad::write_record(p.data(), i,
                               quad::Record{static_cast<int>(linear % kDims.nx), static_cast<int>((linear / kDims.nx) % kDims.ny),
                                            static_cast<int>(linear / kDims.plane()), value_at(3, linear)});
        }
        CHECK(send(p) == PacketVerdict::Stored);
    }
    CHECK(send(run_packet(3, 60, 20)) == PacketVerdict::Stored);  // 20 values again
    CHECK(receiver.current().duplicates == 20);
    CHECK(send(run_packet(3, 80, static_cast<int>(stored - 80))) == PacketVerdict::Stored);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].records == 128);
    CHECK(reports[0].duplicates == 20);
    CHECK(exact(3));
}

TEST_CASE_METHOD(RunFixture, "a run that names another slab or reaches outside this one is rejected whole") {
    std::vector<std::vector<std::uint8_t>> bad;
    bad.push_back(run_packet(0, 0, 10, 2));              // slab 2's stream
    bad.push_back(run_packet(0, 0, 10, -1));
    bad.push_back(run_packet(0, stored - 5, 6));         // runs one value past the slab's end
    bad.push_back(run_packet(0, stored - 1, 2233));      // a full run from the last value
    auto moved = [&](std::int32_t x, std::int32_t y, std::int32_t z) {
        std::vector<std::uint8_t> p = run_packet(0, 0, 4);
        std::memcpy(p.data() + 16, &x, 4);
        std::memcpy(p.data() + 20, &y, 4);
        std::memcpy(p.data() + 24, &z, 4);
        return p;
    };
    bad.push_back(moved(8, 0, 4));           // x past the volume
    bad.push_back(moved(-1, 0, 4));
    bad.push_back(moved(0, 4, 4));           // y past the volume
    bad.push_back(moved(0, 0, 2));           // below the ghost plane: slab 0's
    bad.push_back(moved(0, 0, 8));           // above the slab: slab 2's
    bad.push_back(moved(0, 0, INT32_MIN));
    std::vector<std::uint8_t> codec = run_packet(0, 0, 4);
    codec[5] = 7;                             // an unknown codec
    bad.push_back(codec);
    std::vector<std::uint8_t> cut = run_packet(0, 0, 4);
    cut.pop_back();                           // payload shorter than its count
    bad.push_back(cut);
    for (std::size_t i = 0; i < bad.size(); ++i) {
        INFO("bad packet " << i);
        CHECK(send(bad[i]) == PacketVerdict::Rejected);
    }
    CHECK(receiver.total_rejected() == bad.size());
    CHECK(receiver.total_packets() == 0);
    for (int b = 0; b < slab.buffers(); ++b)
        for (std::size_t i = 0; i < slab.value_count(); ++i) REQUIRE(slab.values(b)[i] == 0.0f);
}

TEST_CASE_METHOD(RunFixture, "lz4 and zfp runs land where raw ones would; one that does not decode writes nothing") {
    int count = 0;
    SECTION("lz4: exact") {
        std::vector<std::uint8_t> p = coded_packet("lz4", 2, 0, count);
        REQUIRE(p[5] == static_cast<std::uint8_t>(run::Codec::Lz4));
        REQUIRE(count == stored);  // the whole slab in one packet
        std::vector<std::uint8_t> broken = p;
        broken[28] ^= 1;  // a count the payload does not decode to
        CHECK(send(broken) == PacketVerdict::Rejected);
        for (std::size_t i = 0; i < slab.value_count(); ++i) REQUIRE(slab.values(0)[i] == 0.0f);
        CHECK(send(p) == PacketVerdict::Stored);
        REQUIRE(reports.size() == 1);
        CHECK(reports[0].complete);
        CHECK(exact(2));
    }
    SECTION("zfp:16: within its error, one packet for the slab") {
        std::vector<std::uint8_t> p = coded_packet("zfp:16", 2, 0, count);
        REQUIRE(count == stored);
        CHECK(send(p) == PacketVerdict::Stored);
        REQUIRE(reports.size() == 1);
        CHECK(reports[0].records == 128);
        const float* v = shown();
        for (std::int64_t i = 0; i < stored; ++i) {
            const float want = value_at(2, geometry.stored_z_begin * kDims.plane() + i);
            REQUIRE(std::fabs(v[i] - want) <= want * 0x1p-10f);
        }
    }
}

TEST_CASE_METHOD(RunFixture, "a step stamp before the step's first packet times it: sent, begun, published in order") {
    const std::int64_t sent = realtime_ns() - 5'000'000;
    CHECK(send(stamp_packet(0, sent)) == PacketVerdict::Stamp);
    send_step(0);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].sent_ns == sent);
    CHECK(reports[0].begun_ns > sent);
    CHECK(reports[0].published_ns >= reports[0].begun_ns);
    CHECK(receiver.total_stamps() == 1);
    CHECK(receiver.total_packets() == 4);  // a stamp is not a data packet
    const auto p = newest_publication(slab);
    REQUIRE(p);
    CHECK(p->sent_ns == sent);
    CHECK(p->begun_ns == reports[0].begun_ns);
    CHECK(p->published_ns == reports[0].published_ns);
    CHECK(slab.header().live.stamps.load() == 1);
}

TEST_CASE_METHOD(RunFixture, "the stamp after the first batch times a step whose first stamp was lost; the first kept wins") {
    REQUIRE(send(run_packet(0, 0, 50)) == PacketVerdict::Stored);
    CHECK(send(stamp_packet(0, 111)) == PacketVerdict::Stamp);
    CHECK(send(stamp_packet(0, 222)) == PacketVerdict::Stamp);  // a duplicate of another time changes nothing
    send_step(0);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].sent_ns == 111);
    CHECK(newest_publication(slab)->sent_ns == 111);
}

TEST_CASE_METHOD(RunFixture, "a stamp of another slab is refused; one of another step, or too old, times nothing") {
    CHECK(send(stamp_packet(0, 111, 2)) == PacketVerdict::Rejected);
    CHECK(send(stamp_packet(0, 111, 1), 1'000'000'000) == PacketVerdict::Stamp);
    CHECK(send(stamp_packet(5, 333, 1), 1'000'000'000) == PacketVerdict::Stamp);  // replaces it: step 5 is next
    send_step(0);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].sent_ns == 0);
    // A stamp older than the step timeout (500 ms) is not this lap's.
    CHECK(send(stamp_packet(1, 444)) == PacketVerdict::Stamp);
    send_step(1, 1'600'000'000);
    REQUIRE(reports.size() == 2);
    CHECK(reports[1].sent_ns == 0);
    CHECK(reports[1].begun_ns > 0);
    CHECK(newest_publication(slab)->sent_ns == 0);
    CHECK(receiver.total_rejected() == 1);
    CHECK(receiver.total_stamps() == 3);
}
