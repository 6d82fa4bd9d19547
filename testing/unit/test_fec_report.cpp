// Parity that follows the loss (`--fec K+LOW-HIGH`): the receiver's loss
// report byte for byte and every malformed one refused, the sender's view of
// the loss from reports' running totals, the parity chosen for a loss, a
// code's first rows as a smaller code's parity, and a stream whose parity
// changes between steps, rebuilt bit for bit, its loss counted as lost.
#include "slabcast/erasure_code.h"
#include "slabcast/fec_packet.h"
#include "slabcast/fec_receiver.h"
#include "slabcast/fec_report.h"
#include "slabcast/fec_sender.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

using namespace slabcast;
using Bytes = std::vector<std::uint8_t>;

TEST_CASE("FEC loss report matches golden bytes, reads back, and refuses what breaks a rule") {
    Bytes b(fec::kReportBytes, 0xEE);
    fec::write_report(b.data(), {3, 0x0102030405060708ull, 0x1112, 0x2122, 0x010203});
    const Bytes golden = {0x53, 0x43, 0x4C, 0x80, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                          0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x12, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                          0x22, 0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00};
    CHECK(b == golden);
    fec::Report r;
    REQUIRE(fec::parse_report(b.data(), b.size(), r));
    CHECK((r.slab == 3 && r.datagrams == 0x0102030405060708ull && r.lost == 0x1112 && r.groups == 0x2122 &&
           r.lost_squares == 0x010203));
    const auto refused = [&](std::size_t at, std::uint8_t value) {
        Bytes c = golden;
        c[at] = value;
        return !fec::parse_report(c.data(), c.size(), r);
    };
    CHECK(refused(0, 0x54));   // magic
    CHECK(refused(4, 2));      // version
    CHECK(refused(5, 1));      // reserved
    CHECK(refused(13, 1));     // reserved
    CHECK(refused(11, 0x80));  // a negative slab
    CHECK(refused(31, 0x02));  // more lost than sent
    CHECK(refused(39, 0x02));  // more groups than datagrams
    Bytes few = golden;
    few[41] = few[42] = 0;  // squares 3, fewer than lost
    CHECK_FALSE(fec::parse_report(few.data(), few.size(), r));
    CHECK(refused(42, 0x7F));  // squares more than 255 x lost
    CHECK_FALSE(fec::parse_report(golden.data(), golden.size() - 1, r));
    Bytes longer = golden;
    longer.push_back(0);
    CHECK_FALSE(fec::parse_report(longer.data(), longer.size(), r));
}

TEST_CASE("the sender's loss: reports' totals differenced, a restart seen, old figures fading") {
    fec::LossTracker t;
    CHECK(t.dispersion() == 1);
    t.take({0, 1000, 10, 10, 10});  // ten groups, one lost in each: no bunching
    CHECK((t.datagrams() == 1000 && t.lost() == 10));
    CHECK(t.dispersion() == Approx(1));
    t.take({0, 1000, 10, 10, 10});  // the same report again: nothing new
    CHECK((t.datagrams() == 1000 && t.lost() == 10));
    t.take({0, 3000, 50, 20, 10 + 4 * 100});  // ten more groups, four of which lost 10 each
    CHECK((t.datagrams() == 3000 && t.lost() == 50));
    CHECK(t.dispersion() == Approx((410.0 / 20 - 2.5 * 2.5) / 2.5));
    t.take({0, 500, 0, 5, 0});  // the receiver started again: its totals count from 0
    CHECK((t.datagrams() == 3500 && t.lost() == 50));
    // A path that stopped losing: the old loss fades within about kMemory datagrams.
    for (std::uint64_t d = 500; d <= 500 + 3 * fec::LossTracker::kMemory; d += 10'000) t.take({0, d, 0, d / 100, 0});
    CHECK(t.datagrams() <= fec::LossTracker::kMemory + 10'000);
    CHECK(t.lost() * 10'000 < t.datagrams());  // 1.4% then, under 0.01% now
}

TEST_CASE("parity for a loss: the least that holds a group's failure to 1 in 10^5, within LOW..HIGH") {
    CHECK(fec::parity_for_loss(200, 1000, 0, 1, 2, 40) == 40);  // too few datagrams measured: the most
    CHECK(fec::parity_for_loss(200, 1'000'000, 0, 1, 2, 40) == 2);
    int last = 0;
    for (double loss : {0.001, 0.01, 0.02, 0.05, 0.08}) {
        const auto lost = static_cast<std::uint64_t>(loss * 1e6);
        const int m = fec::parity_for_loss(220, 1'000'000, static_cast<double>(lost), 1, 1, 64);
        INFO("loss " << loss << ": m " << m);
        CHECK(m >= last);  // more loss, never less parity
        last = m;
        // The group fails (loses more than m of 220 + m) rarely at this loss, and with one fewer it would not hold.
        const auto tail = [&](int mm) {
            double sum = 0;
            const int n = 220 + mm;
            for (int x = mm + 1; x <= n; ++x)
                sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(x + 1.0) - std::lgamma(n - x + 1.0) +
                                x * std::log(loss) + (n - x) * std::log1p(-loss));
            return sum;
        };
        CHECK(tail(m) <= fec::kGroupFailure);
        if (m > 1) CHECK(tail(m - 2) > fec::kGroupFailure);
    }
    CHECK(fec::parity_for_loss(220, 1'000'000, 50'000, 1, 1, 64) >= 22);  // 5%: more than 2.2 x 5% x 200 would say
    CHECK(fec::parity_for_loss(200, 1'000'000, 500'000, 1, 2, 40) == 40);  // more than HIGH can hold: HIGH
    // Bunched losses (bursts) need more parity than the same loss one by one.
    const int alone = fec::parity_for_loss(200, 1'000'000, 10'000, 1, 1, 64);
    const int bunched = fec::parity_for_loss(200, 1'000'000, 10'000, 3, 1, 64);
    INFO("1%: " << alone << " alone, " << bunched << " in bunches of 3");
    CHECK(bunched > alone);
    CHECK(fec::parity_for_loss(200, 1'000'000, 10'000, std::nan(""), 1, 64) >= bunched);
}

TEST_CASE("a code's first parity rows are a smaller code's parity, bit for bit") {
    const int k = 30;
    std::mt19937 random(7);
    std::vector<Bytes> data(k, Bytes(1000));
    for (auto& d : data)
        for (auto& byte : d) byte = static_cast<std::uint8_t>(random());
    for (int m : {1, 4, 9}) {
        fec::ErasureCode big(k, 12), small(k, m);
        std::vector<Bytes> a(static_cast<std::size_t>(m), Bytes(1000, 0)), b = a;
        std::vector<std::uint8_t*> pa, pb;
        std::vector<const std::uint8_t*> in;
        for (auto& p : a) pa.push_back(p.data());
        for (auto& p : b) pb.push_back(p.data());
        for (auto& d : data) in.push_back(d.data());
        for (int i = 0; i < k; ++i) big.add(i, data[static_cast<std::size_t>(i)].data(), 1000, pa.data(), m);
        small.encode(in.data(), 1000, pb.data());
        CHECK(a == b);
    }
    fec::ErasureCode code(k, 4);
    std::vector<std::uint8_t*> none(4, nullptr);
    CHECK_THROWS_AS(code.add(0, data[0].data(), 10, none.data(), 5), std::out_of_range);
    CHECK_THROWS_AS(code.add(0, data[0].data(), 10, none.data(), 0), std::out_of_range);
}

namespace {

Bytes run_packet(int values, int seed) {
    Bytes p(run::packet_bytes(values));
    run::Header h;
    h.count = values;
    h.x = seed;
    std::uint8_t* payload = run::write_header(p.data(), h);
    for (int b = 0; b < 4 * values; ++b) payload[b] = static_cast<std::uint8_t>(seed * 31 + b);
    return p;
}

}  // namespace

TEST_CASE("parity changed between steps: each group as its own parity says, rebuilt, its loss counted") {
    const int k = 20, most = 8;
    fec::GroupSender sender(k, most, 2);
    fec::GroupReceiver receiver(8, 64);
    std::vector<Bytes> sent, wire;
    std::vector<std::uint32_t> group;
    std::map<std::uint32_t, int> parity_of_group;
    const auto take_parity = [&](const std::vector<fec::ParityDatagram>& ready) {
        for (const auto& p : ready) {
            fec::Header h;
            REQUIRE(fec::parse_header(p.bytes, p.length, h) == fec::ParseResult::Ok);
            CHECK(h.k == k);
            CHECK(h.m == parity_of_group[h.group]);
            wire.emplace_back(p.bytes, p.bytes + p.length);
            group.push_back(h.group);
        }
    };
    int seed = 0;
    for (int m : {8, 3, 5}) {
        sender.set_parity(m);  // between steps: every group closed, so at once
        CHECK(sender.m() == m);
        for (int i = 0; i < 90; ++i) {
            const Bytes packet = run_packet(1 + (seed * 53) % 2229, seed);
            ++seed;
            Bytes out(fec::kDataHeaderBytes + packet.size());
            std::copy(packet.begin(), packet.end(), out.begin() + fec::kDataHeaderBytes);
            const auto& ready = sender.add(out.data(), packet.data(), packet.size());
            fec::Header h;
            REQUIRE(fec::parse_header(out.data(), out.size(), h) == fec::ParseResult::Ok);
            parity_of_group[h.group] = m;
            wire.push_back(out);
            group.push_back(h.group);
            sent.push_back(packet);
            take_parity(ready);
        }
        take_parity(sender.flush());
    }
    // A set_parity while groups are open waits for the flush.
    Bytes packet = run_packet(5, 1), out(fec::kDataHeaderBytes + packet.size());
    sender.add(out.data(), packet.data(), packet.size());
    sender.set_parity(2);
    CHECK(sender.m() == 5);
    sender.flush();
    CHECK(sender.m() == 2);
    CHECK_THROWS_AS(sender.set_parity(9), std::invalid_argument);

    // Lose up to each group's own parity count, at random: every data datagram
    // comes back. (One parity datagram of each group is kept: a group none of
    // whose parity came has no code the receiver knows, and is not counted.)
    std::mt19937 random(58);
    std::map<std::uint32_t, std::vector<std::size_t>> members;
    std::set<std::uint32_t> kept;
    for (std::size_t i = 0; i < wire.size(); ++i) {
        fec::Header h;
        REQUIRE(fec::parse_header(wire[i].data(), wire[i].size(), h) == fec::ParseResult::Ok);
        if (h.parity && kept.insert(group[i]).second) continue;
        members[group[i]].push_back(i);
    }
    std::set<std::size_t> lost;
    for (auto& [g, of] : members) {
        std::shuffle(of.begin(), of.end(), random);
        const auto take = static_cast<std::size_t>(random() % (parity_of_group[g] + 1));
        for (std::size_t j = 0; j < take && j < of.size(); ++j) lost.insert(of[j]);
    }
    std::multiset<Bytes> got;
    for (std::size_t i = 0; i < wire.size(); ++i)
        if (!lost.count(i))
            receiver.accept(wire[i].data(), wire[i].size(),
                            [&](const std::uint8_t* d, std::size_t n) { got.insert(Bytes(d, d + n)); });
    receiver.finish();
    CHECK(got == std::multiset<Bytes>(sent.begin(), sent.end()));
    CHECK(receiver.counts().unrepaired == 0);
    // The path's loss as the receiver reports it: every datagram sent, every one lost.
    CHECK(receiver.counts().group_datagrams == wire.size());
    CHECK(receiver.counts().group_lost == lost.size());
    CHECK(receiver.counts().groups == members.size());
    std::uint64_t squares = 0;
    for (const auto& [g, of] : members) {
        std::uint64_t n = 0;
        for (std::size_t i : of) n += lost.count(i);
        squares += n * n;
    }
    CHECK(receiver.counts().group_lost_squares == squares);
}
