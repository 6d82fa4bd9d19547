// Forward error correction's datagrams and groups (slabcast/fec_packet.h,
// fec_sender.h, fec_receiver.h): the shim and parity header byte for byte,
// every malformed header refused by name, and a stream through the sender
// and the receiver: with up to m of a group's datagrams lost, every data
// datagram comes out once, bit for bit; with more, exactly the lost ones of
// that group stay lost, as they would without FEC.
#include "slabcast/fec_packet.h"
#include "slabcast/fec_receiver.h"
#include "slabcast/fec_sender.h"
#include "slabcast/run_packet.h"
#include "slabcast/step_stamp.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

using namespace slabcast;
using Bytes = std::vector<std::uint8_t>;

TEST_CASE("FEC shim and parity header match golden bytes and read back") {
    Bytes data(fec::kDataHeaderBytes + 5, 0xEE), parity(fec::kParityHeaderBytes + 5, 0xEE);
    fec::write_header(data.data(), {false, 7, 0, 0, 0, 0x01020304});
    fec::write_header(parity.data(), {true, 3, 200, 28, 150, 0x0A0B0C0D});
    const Bytes data_golden = {0x53, 0x43, 0x45, 0x80, 0x01, 0x07, 0x00, 0x00,
                               0x04, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00};
    const Bytes parity_golden = {0x53, 0x43, 0x50, 0x80, 0x01, 0x03, 0xC8, 0x1C,
                                 0x0D, 0x0C, 0x0B, 0x0A, 0x96, 0x00, 0x00, 0x00};
    CHECK(Bytes(data.begin(), data.begin() + 16) == data_golden);
    CHECK(Bytes(parity.begin(), parity.begin() + 16) == parity_golden);
    fec::Header h;
    REQUIRE(fec::parse_header(data.data(), data.size(), h) == fec::ParseResult::Ok);
    CHECK((!h.parity && h.index == 7 && h.group == 0x01020304u));
    REQUIRE(fec::parse_header(parity.data(), parity.size(), h) == fec::ParseResult::Ok);
    CHECK((h.parity && h.index == 3 && h.k == 200 && h.m == 28 && h.count == 150 && h.group == 0x0A0B0C0Du));
}

TEST_CASE("FEC headers that break a rule are refused, each by name") {
    Bytes parity(fec::kParityHeaderBytes + 100, 0);
    fec::write_header(parity.data(), {true, 1, 20, 4, 20, 9});
    const auto result = [&](Bytes p, std::size_t length = 0) {
        fec::Header h;
        return fec::parse_header(p.data(), length ? length : p.size(), h);
    };
    auto with = [&](std::size_t at, std::uint8_t v) {
        Bytes p = parity;
        p[at] = v;
        return p;
    };
    CHECK(result(parity) == fec::ParseResult::Ok);
    CHECK(result(with(0, 0x54)) == fec::ParseResult::BadMagic);
    CHECK(result(with(4, 2)) == fec::ParseResult::BadVersion);
    CHECK(result(with(13, 1)) == fec::ParseResult::BadReserved);
    CHECK(result(with(6, 0)) == fec::ParseResult::BadCode);     // k 0
    CHECK(result(with(7, 65)) == fec::ParseResult::BadCode);    // m over 64
    CHECK(result(with(6, 240)) == fec::ParseResult::Ok);  // 240+4 is a code, count 20 <= 240
    CHECK(result(with(5, 4)) == fec::ParseResult::BadIndex);    // index m
    CHECK(result(with(12, 0)) == fec::ParseResult::BadCount);
    CHECK(result(with(12, 21)) == fec::ParseResult::BadCount);  // count over k
    CHECK(result(parity, fec::kParityHeaderBytes) == fec::ParseResult::TooShort);
    Bytes long_one(fec::kParityHeaderBytes + fec::kMaxShardBytes + 1, 0);
    std::copy(parity.begin(), parity.begin() + 16, long_one.begin());
    CHECK(result(long_one) == fec::ParseResult::TooLong);
    Bytes data(fec::kDataHeaderBytes + 1, 0);
    fec::write_header(data.data(), {false, 239, 0, 0, 0, 1});
    CHECK(result(data) == fec::ParseResult::Ok);
    data[5] = 240;
    CHECK(result(data) == fec::ParseResult::BadIndex);
    data[5] = 0;
    data[6] = 1;
    CHECK(result(data) == fec::ParseResult::BadReserved);
    CHECK(fec::to_string(fec::ParseResult::BadCount) != std::string("unknown"));
}

namespace {

// A run packet of `count` raw values, a quad packet of `n` records, or a step stamp: what a stream sends.
Bytes run_packet(int count, int seed) {
    Bytes p(run::packet_bytes(count));
    run::Header h;
    h.step = 3;
    h.slab = 1;
    h.x = seed;
    h.count = count;
    std::uint8_t* payload = run::write_header(p.data(), h);
    for (std::size_t i = 0; i < 4 * static_cast<std::size_t>(count); ++i) payload[i] = static_cast<std::uint8_t>(seed * 31 + i);
    return p;
}
Bytes quad_packet(int n, int seed) {
    Bytes p(quad::packet_bytes(n));
    quad::write_header(p.data(), 3, n);
    for (int i = 0; i < n; ++i) quad::write_record(p.data(), i, {seed, i, 0, static_cast<float>(seed + i)});
    return p;
}
Bytes stamp_packet(int seed) {
    Bytes p(stamp::kBytes);
    stamp::write(p.data(), {3, 1, 1000 + seed});
    return p;
}

struct Wire {
    std::vector<Bytes> datagrams;  // as sent, in order
    std::vector<bool> is_data;
    std::vector<std::uint32_t> group;
};

// The stream's datagrams through a GroupSender, a flush at the end (a step's end).
Wire send(const std::vector<Bytes>& stream, int k, int m, int depth) {
    fec::GroupSender sender(k, m, depth);
    Wire w;
    auto parity = [&](const std::vector<fec::ParityDatagram>& out) {
        for (const auto& p : out) {
            w.datagrams.emplace_back(p.bytes, p.bytes + p.length);
            w.is_data.push_back(false);
            fec::Header h;
            REQUIRE(fec::parse_header(p.bytes, p.length, h) == fec::ParseResult::Ok);
            w.group.push_back(h.group);
        }
    };
    for (const Bytes& d : stream) {
        Bytes out(fec::kDataHeaderBytes + d.size());
        std::copy(d.begin(), d.end(), out.begin() + fec::kDataHeaderBytes);
        const auto& ready = sender.add(out.data(), d.data(), d.size());
        fec::Header h;
        REQUIRE(fec::parse_header(out.data(), out.size(), h) == fec::ParseResult::Ok);
        w.datagrams.push_back(out);
        w.is_data.push_back(true);
        w.group.push_back(h.group);
        parity(ready);
    }
    parity(sender.flush());
    return w;
}

// What a receiver hands on from the datagrams not in `lost`: each distinct one's count.
std::map<Bytes, int> receive(const Wire& w, const std::set<std::size_t>& lost, fec::ReceiverCounts* counts = nullptr) {
    fec::GroupReceiver receiver(16, 64);
    std::map<Bytes, int> got;
    for (std::size_t i = 0; i < w.datagrams.size(); ++i) {
        if (lost.count(i)) continue;
        receiver.accept(w.datagrams[i].data(), w.datagrams[i].size(),
                        [&](const std::uint8_t* d, std::size_t n) { ++got[Bytes(d, d + n)]; });
    }
    receiver.finish();
    if (counts) *counts = receiver.counts();
    return got;
}

std::vector<Bytes> a_stream(int count) {
    std::vector<Bytes> s;
    for (int i = 0; i < count; ++i)
        s.push_back(i % 9 == 4 ? stamp_packet(i) : i % 5 == 2 ? quad_packet(1 + i % 559, i) : run_packet(1 + (i * 37) % 2229, i));
    return s;
}

}  // namespace

TEST_CASE("FEC stream: nothing lost, every datagram once, m parity for every k data") {
    const auto stream = a_stream(97);
    const Wire w = send(stream, 20, 4, 3);
    std::size_t parity = 0;
    for (bool d : w.is_data) parity += d ? 0 : 1;
    CHECK(parity == 4 * 6);  // 97 in 3 slots: groups of 20, 20, 20 (full) and 3 cut short at the flush
    // Spread: before the flush's parity at the end, never more than one parity datagram in a row.
    std::size_t last_data = w.is_data.size();
    while (last_data > 0 && !w.is_data[last_data - 1]) --last_data;
    std::size_t run = 0, longest = 0;
    for (std::size_t i = 0; i < last_data; ++i) {
        run = w.is_data[i] ? 0 : run + 1;
        longest = std::max(longest, run);
    }
    CHECK(longest == 1);
    fec::ReceiverCounts counts;
    const auto got = receive(w, {}, &counts);
    REQUIRE(got.size() == stream.size());
    for (const Bytes& d : stream) CHECK(got.at(d) == 1);
    CHECK(counts.repaired == 0);
    CHECK(counts.unrepaired == 0);
    CHECK(counts.malformed == 0);
}

TEST_CASE("FEC stream: up to m lost a group, every data datagram comes back bit for bit") {
    const int k = 20, m = 4, depth = 3;
    const auto stream = a_stream(301);
    const Wire w = send(stream, k, m, depth);
    std::mt19937 random(58);
    for (int trial = 0; trial < 30; ++trial) {
        // Up to m of each group's datagrams, data or parity, at random.
        std::map<std::uint32_t, std::vector<std::size_t>> of_group;
        for (std::size_t i = 0; i < w.datagrams.size(); ++i) of_group[w.group[i]].push_back(i);
        std::set<std::size_t> lost;
        std::size_t data_lost = 0;
        for (auto& [group, members] : of_group) {
            std::shuffle(members.begin(), members.end(), random);
            const auto take = static_cast<std::size_t>(random() % (m + 1));
            for (std::size_t j = 0; j < take && j < members.size(); ++j) {
                lost.insert(members[j]);
                data_lost += w.is_data[members[j]] ? 1 : 0;
            }
        }
        fec::ReceiverCounts counts;
        const auto got = receive(w, lost, &counts);
        INFO("trial " << trial << ": " << lost.size() << " lost, " << data_lost << " of them data");
        REQUIRE(got.size() == stream.size());
        for (const Bytes& d : stream) REQUIRE(got.at(d) == 1);
        CHECK(counts.repaired == data_lost);
        CHECK(counts.unrepaired == 0);
    }
}

TEST_CASE("FEC stream: a burst of depth x m datagrams is spread over the groups and repaired") {
    const int k = 20, m = 4, depth = 4;
    const auto stream = a_stream(400);
    const Wire w = send(stream, k, m, depth);
    for (std::size_t start : {std::size_t{0}, std::size_t{37}, std::size_t{150}, w.datagrams.size() - 40}) {
        std::set<std::size_t> lost;
        for (std::size_t i = start; i < start + depth * m && i < w.datagrams.size(); ++i) lost.insert(i);
        fec::ReceiverCounts counts;
        const auto got = receive(w, lost, &counts);
        INFO("burst of " << lost.size() << " from datagram " << start);
        CHECK(got.size() == stream.size());
        CHECK(counts.unrepaired == 0);
    }
}

TEST_CASE("FEC stream: more than m lost in a group leaves exactly those lost, nothing else changed") {
    const int k = 20, m = 4, depth = 2;
    const auto stream = a_stream(120);
    const Wire w = send(stream, k, m, depth);
    // Every datagram of group 1 but k - 1 of them: m + 1 lost.
    std::set<std::size_t> lost;
    std::set<Bytes> gone;
    for (std::size_t i = 0; i < w.datagrams.size() && lost.size() < static_cast<std::size_t>(m + 1); ++i)
        if (w.group[i] == 1 && w.is_data[i]) {
            lost.insert(i);
            gone.insert(Bytes(w.datagrams[i].begin() + fec::kDataHeaderBytes, w.datagrams[i].end()));
        }
    fec::ReceiverCounts counts;
    const auto got = receive(w, lost, &counts);
    CHECK(got.size() == stream.size() - gone.size());
    for (const Bytes& d : stream) CHECK(got.count(d) == (gone.count(d) ? 0u : 1u));
    CHECK(counts.unrepaired_groups == 1);
    CHECK(counts.unrepaired == gone.size());
    CHECK(counts.repaired == 0);
}

TEST_CASE("FEC receiver: parity that disagrees with its group is counted and repairs nothing") {
    const auto stream = a_stream(40);
    Wire w = send(stream, 20, 4, 1);
    // Data 0 of group 0 lost; its first parity packet claims another count.
    std::set<std::size_t> lost = {0};
    std::size_t first_parity = 0;
    while (w.is_data[first_parity]) ++first_parity;
    w.datagrams[first_parity][12] = 19;
    fec::ReceiverCounts counts;
    const auto got = receive(w, lost, &counts);
    CHECK(counts.malformed >= 1);
    CHECK(got.size() == stream.size() - 1);  // group 0's lost datagram not rebuilt from forged parity
    CHECK(counts.unrepaired == 1);
}

TEST_CASE("FEC receiver: group numbers that wrap past 2^32 are repaired like any others") {
    const int k = 4, m = 2;
    slabcast::fec::ErasureCode code(k, m);
    fec::GroupReceiver receiver(8, 16);
    std::vector<Bytes> sent, got;
    for (std::uint32_t id : {0xFFFFFFFEu, 0xFFFFFFFFu, 0u, 1u}) {
        std::vector<Bytes> shards;
        for (int i = 0; i < k; ++i) shards.push_back(stamp_packet(static_cast<int>(id % 100) * 10 + i));
        shards.resize(k + m, Bytes(stamp::kBytes));
        std::vector<std::uint8_t*> p;
        for (auto& s : shards) p.push_back(s.data());
        code.encode(p.data(), stamp::kBytes, p.data() + k);
        const auto hand_on = [&](const std::uint8_t* d, std::size_t n) { got.emplace_back(d, d + n); };
        for (int i = 0; i < k + m; ++i) {
            if (i < k) sent.push_back(shards[static_cast<std::size_t>(i)]);
            if (i == 1) continue;  // lost
            const bool parity = i >= k;
            Bytes datagram(fec::header_bytes(parity) + stamp::kBytes);
            fec::write_header(datagram.data(), {parity, static_cast<std::uint8_t>(parity ? i - k : i), k, m, k, id});
            std::copy(shards[static_cast<std::size_t>(i)].begin(), shards[static_cast<std::size_t>(i)].end(),
                      datagram.begin() + static_cast<long>(fec::header_bytes(parity)));
            receiver.accept(datagram.data(), datagram.size(), hand_on);
        }
    }
    CHECK(receiver.counts().repaired == 4);
    CHECK(receiver.counts().late == 4);  // each group's second parity, after its repair
    std::sort(sent.begin(), sent.end());
    std::sort(got.begin(), got.end());
    CHECK(got == sent);
}
