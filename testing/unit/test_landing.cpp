// Full raw run packets landing straight in the slab (BatchReceiver with the
// SlabReceiver as its LandingSite), over real UDP on loopback into real
// shared memory: in order they land with no copy of ours; out of order, lost,
// duplicated, mixed with quad packets, other codecs and bad packets, every
// value shown is still exactly the one that belongs there, and a bad packet
// leaves nothing that is ever shown.
#include "base/udp.h"
#include "receive/batch_receiver.h"
#include "receive/slab_receiver.h"
#include "shuffle/slab_walker.h"
#include "temp_shm_dir.h"

#include "slabcast/publication.h"
#include "slabcast/quad_packet.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

using namespace slabcast;

namespace {

const Dims kDims{100, 60, 24};  // one slab of all 24 planes: 144,000 values, 65 raw run packets
constexpr int kDepth = 24;

float value_at(int step, std::int64_t linear) { return static_cast<float>(step * 1'000'000 + linear); }

struct Link {
    TempShmDir dir;
    SlabMapping slab =
        SlabMapping::create(dir.file("t.slab0"), kDims, kDepth, slab_geometry(kDims, kDepth, 0, 0), "density");
    std::vector<StepReport> reports;
    SlabReceiver receiver{0, slab, [this](const StepReport& r) { reports.push_back(r); }};
    Socket rx{open_udp_socket(AF_INET)}, tx{open_udp_socket(AF_INET)};
    BatchReceiver batch;
    std::vector<std::vector<float>> volumes;
    std::size_t sent = 0, handed = 0;  // datagrams

    explicit Link(bool gro) : batch(64, gro) {
        bind_socket(rx.fd(), parse_endpoint("127.0.0.1:0"));
        set_receive_timeout(rx.fd(), 100);
        raise_buffer(rx.fd(), true, 8 << 20, "test");  // a whole step fits: nothing lost on loopback
        if (gro) REQUIRE(enable_gro(rx.fd()));
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        getsockname(rx.fd(), reinterpret_cast<sockaddr*>(&a), &len);
        REQUIRE(::connect(tx.fd(), reinterpret_cast<sockaddr*>(&a), len) == 0);
        batch.set_landing(&receiver);
    }

    // Step `step` as the shuffler packs it, one packet per entry.
    std::vector<std::vector<std::uint8_t>> packets(int step, const std::string& codec = "none") {
        std::vector<float>& v = volumes.emplace_back(static_cast<std::size_t>(kDims.count()));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = value_at(step, static_cast<std::int64_t>(i));
        SlabWalker walker(kDims, 0, kDepth, SendOrder::Scan, WireFormat::Run, run::parse_codec(codec));
        std::vector<std::vector<std::uint8_t>> out;
        for (;;) {
            std::vector<std::uint8_t> p(run::kMaxPacketBytes);
            const auto packet = walker.fill_run(p.data(), v.data(), step, 0);
            if (packet.count == 0) return out;
            p.resize(packet.bytes);
            out.push_back(std::move(p));
        }
    }
    // `datagrams`: how many the receiver gets of this send (a GSO send is several).
    void send(const std::vector<std::uint8_t>& p, std::size_t datagrams = 1) {
        REQUIRE(::send(tx.fd(), p.data(), p.size(), 0) == static_cast<ssize_t>(p.size()));
        sent += datagrams;
    }
    // Sends `list` (a few at a time, so the socket never overflows) and
    // receives it all; returns how many datagrams were handed over.
    std::size_t send_and_receive(const std::vector<std::vector<std::uint8_t>>& list) {
        std::size_t handed = 0;
        for (std::size_t i = 0; i < list.size();) {
            const std::size_t end = std::min(list.size(), i + 16);
            for (; i < end; ++i) send(list[i]);
            handed += drain();
        }
        return handed;
    }
    // Receives until every datagram sent so far is handed over, not until the
    // socket is quiet: on a busy machine loopback may hand them over late.
    std::size_t drain() {
        std::size_t n = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (handed < sent && std::chrono::steady_clock::now() < deadline)
            batch.receive(rx.fd(), [&](const Datagram& d) {
                receiver.handle(d.data, d.length, 1'000'000'000, d.landed);
                ++n;
                ++handed;
            });
        INFO("datagrams sent " << sent << ", handed over in 30 s " << handed);
        REQUIRE(handed == sent);
        return n;
    }
    const float* shown() const { return slab.values(newest_publication(slab)->buffer); }
};

}  // namespace

TEST_CASE("full raw run packets sent in order land in the slab with no copy, one datagram per call slot or by GRO") {
    for (const bool gro : {false, true}) {
        Link link(gro);
        const auto step = link.packets(0);
        REQUIRE(step.size() == 65u);
        if (gro) {  // GSO sends of 7 and 3 packets, as a paced shuffler's bursts of 10 arrive
            REQUIRE(enable_gso(link.tx.fd(), static_cast<int>(run::kMaxPacketBytes)));
            link.send(step[0]);  // the step begins: from here on the receiver knows where runs go
            link.drain();
            int sends = 0;
            for (std::size_t i = 1; i < step.size(); ++sends) {
                const std::size_t end = std::min(step.size(), i + (sends % 2 == 0 ? 7 : 3));
                std::vector<std::uint8_t> joined;
                const std::size_t packets = end - i;
                for (; i < end; ++i) joined.insert(joined.end(), step[i].begin(), step[i].end());
                link.send(joined, packets);
                if (sends % 4 == 3) link.drain();  // several messages of both sizes wait in the socket
            }
            link.drain();
        } else {
            link.send_and_receive(step);
        }
        INFO("records " << link.receiver.current().records << " rejected " << link.receiver.current().rejected
                        << " stale " << link.receiver.current().stale << " packets " << link.receiver.current().packets
                        << " landed " << link.batch.landed() << " copied " << link.batch.copied_out());
        REQUIRE(link.reports.size() == 1);
        CHECK(link.reports[0].complete);
        const float* v = link.shown();
        for (std::int64_t i = 0; i < kDims.count(); ++i) REQUIRE(v[i] == value_at(0, i));
        // The first packet of a step goes through the buffer (nothing is known
        // of the step yet), and whatever shares its call; the rest land.
        INFO("gro " << gro << ": landed " << link.batch.landed() << ", copied out " << link.batch.copied_out());
        CHECK(link.batch.landed() >= (gro ? 60u : 40u));
    }
}

TEST_CASE("out of order, lost, duplicated, mixed and bad datagrams: every value shown is the one that belongs there") {
    Link link(false);
    link.send_and_receive(link.packets(0));  // step 0 whole: what holes of step 1 show
    REQUIRE(link.reports.size() == 1);

    auto step = link.packets(1);
    std::vector<std::pair<std::int64_t, std::int64_t>> arrived_runs;  // (first, count) beyond the raw packets
    std::vector<std::vector<std::uint8_t>> list(step.begin(), step.begin() + 10);  // in order: they land
    list.push_back(step[11]);  // 10 comes after 11
    list.push_back(step[10]);
    list.push_back(step[10]);  // a duplicate
    // Packet 12 lost; 13 sent as a bad packet naming another slab, then for real.
    std::vector<std::uint8_t> bad = step[13];
    const std::int32_t other_slab = 5;
    std::memcpy(bad.data() + 12, &other_slab, 4);
    for (std::size_t i = run::kHeaderBytes; i < bad.size(); ++i) bad[i] = 0x7f;  // values no step has
    list.push_back(bad);
    list.push_back(step[13]);
    list.insert(list.end(), step.begin() + 14, step.begin() + 30);
    // A packet whose length does not match its count, where the next one belongs.
    std::vector<std::uint8_t> junk = step[30];
    const std::int32_t bad_count = 1;
    std::memcpy(junk.data() + 28, &bad_count, 4);
    list.push_back(junk);
    list.insert(list.end(), step.begin() + 30, step.begin() + 40);
    // Packets 40-49 lost as raw packets; within their stretch an lz4 packet
    // and a quad packet arrive (any step may mix them).
    const std::int64_t lost_from = 40 * run::kMaxValues, lost_to = 50 * run::kMaxValues;
    for (const auto& p : link.packets(1, "lz4")) {
        run::Header h;
        REQUIRE(run::parse_header(p.data(), p.size(), h) == run::ParseResult::Ok);
        const std::int64_t first = volume_offset(kDims, h.x, h.y, h.z);
        if (first >= lost_from && first + h.count <= lost_to - 600) {
            list.push_back(p);
            arrived_runs.emplace_back(first, h.count);
            break;
        }
    }
    REQUIRE(arrived_runs.size() == 1u);
    std::vector<std::uint8_t> quad_packet(quad::packet_bytes(quad::kMaxRecords));
    quad::write_header(quad_packet.data(), 1, quad::kMaxRecords);
    const std::int64_t quad_first = lost_to - 560;
    for (int i = 0; i < quad::kMaxRecords; ++i) {
        const std::int64_t at = quad_first + i;
        quad::write_record(quad_packet.data(), i,
                           quad::Record{static_cast<int>(at % kDims.nx), static_cast<int>((at / kDims.nx) % kDims.ny),
                                        static_cast<int>(at / kDims.plane()), value_at(1, at)});
    }
    list.push_back(quad_packet);
    arrived_runs.emplace_back(quad_first, 560);
    list.insert(list.end(), step.begin() + 50, step.end());  // in order again
    link.send_and_receive(list);
    link.receiver.finish_current();
    REQUIRE(link.reports.size() == 2);
    const StepReport& r = link.reports[1];
    CHECK(r.rejected == 2);
    CHECK(r.duplicates == static_cast<std::uint64_t>(run::kMaxValues));
    CHECK(link.batch.landed() > 0u);
    CHECK(link.batch.copied_out() > 0u);

    // Each value is step 1's where a packet brought it, else step 0's.
    std::vector<bool> arrived(static_cast<std::size_t>(kDims.count()), true);
    const auto mark = [&](std::int64_t first, std::int64_t count, bool value) {
        for (std::int64_t i = first; i < first + count; ++i) arrived[static_cast<std::size_t>(i)] = value;
    };
    mark(12 * run::kMaxValues, run::kMaxValues, false);
    mark(lost_from, lost_to - lost_from, false);
    for (const auto& [first, count] : arrived_runs) mark(first, count, true);
    const float* v = link.shown();
    std::int64_t wrong = 0, from_step_1 = 0;
    for (std::int64_t i = 0; i < kDims.count(); ++i) {
        const float want = value_at(arrived[static_cast<std::size_t>(i)] ? 1 : 0, i);
        wrong += v[i] != want;
        from_step_1 += arrived[static_cast<std::size_t>(i)];
    }
    CHECK(wrong == 0);
    CHECK(r.records == static_cast<std::uint64_t>(from_step_1));
}

TEST_CASE("a bad packet that landed where a lost one belonged leaves nothing shown, even in a first step") {
    Link link(false);
    const auto step = link.packets(0);
    link.send_and_receive({step.begin(), step.begin() + 5});
    std::vector<std::uint8_t> bad = step[5];  // lands where packet 5 belongs, but names another slab
    const std::int32_t other_slab = 3;
    std::memcpy(bad.data() + 12, &other_slab, 4);
    for (std::size_t i = run::kHeaderBytes; i < bad.size(); ++i) bad[i] = 0x7f;
    std::vector<std::vector<std::uint8_t>> list{bad};
    list.insert(list.end(), step.begin() + 6, step.end());  // packet 5 itself lost
    link.send_and_receive(list);
    link.receiver.finish_current();
    REQUIRE(link.reports.size() == 1);
    CHECK(link.reports[0].rejected == 1);
    CHECK(link.batch.copied_out() >= 1u);  // the bad one, out of the slab it landed in
    CHECK(link.batch.landed() > 0u);
    const float* v = link.shown();
    const std::uint8_t* ages = link.slab.ages(newest_publication(link.slab)->buffer);
    for (std::int64_t i = 0; i < kDims.count(); ++i) {
        const bool lost = i >= 5 * run::kMaxValues && i < 6 * run::kMaxValues;
        REQUIRE(v[i] == (lost ? 0.0f : value_at(0, i)));  // a hole with nothing older is 0
        REQUIRE(ages[i] == (lost ? kAgeNeverArrived : 0));
    }
}
