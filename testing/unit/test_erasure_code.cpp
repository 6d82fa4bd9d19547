// The Reed-Solomon code FEC groups use (slabcast/erasure_code.h): every
// pattern of up to m lost shards of a group (data or parity) gives back every
// data shard bit for bit, shards shorter than the group's longest included;
// more than m lost rebuilds nothing; the streaming encoder is the whole one.
#include "slabcast/erasure_code.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

using slabcast::fec::ErasureCode;

namespace {

struct Group {
    int k, m;
    std::size_t length;
    std::vector<std::vector<std::uint8_t>> shards;
    std::vector<std::uint8_t*> pointers;
    Group(int k_, int m_, std::size_t length_, unsigned seed) : k(k_), m(m_), length(length_) {
        std::mt19937 random(seed);
        shards.assign(static_cast<std::size_t>(k + m), std::vector<std::uint8_t>(length));
        for (int i = 0; i < k; ++i)
            for (auto& b : shards[static_cast<std::size_t>(i)]) b = static_cast<std::uint8_t>(random());
        for (auto& s : shards) pointers.push_back(s.data());
    }
};

// Rebuilds with the shards in `lost` (a bit mask over k + m) taken away;
// true when every data shard came back as it was.
bool rebuilds(ErasureCode& code, const Group& g, const std::vector<int>& lost) {
    std::vector<const std::uint8_t*> present(g.pointers.begin(), g.pointers.end());
    for (int i : lost) present[static_cast<std::size_t>(i)] = nullptr;
    std::vector<std::vector<std::uint8_t>> out(static_cast<std::size_t>(g.k), std::vector<std::uint8_t>(g.length, 0xA5));
    std::vector<std::uint8_t*> out_pointers;
    for (auto& o : out) out_pointers.push_back(o.data());
    if (!code.rebuild(present.data(), g.length, out_pointers.data())) return false;
    for (int i : lost)
        if (i < g.k && out[static_cast<std::size_t>(i)] != g.shards[static_cast<std::size_t>(i)]) return false;
    return true;
}

}  // namespace

TEST_CASE("erasure code: every pattern of up to m losses rebuilds every data shard") {
    for (auto [k, m] : {std::pair{1, 1}, {4, 2}, {8, 3}, {10, 4}}) {
        ErasureCode code(k, m);
        Group g(k, m, 1000, static_cast<unsigned>(k * 31 + m));
        code.encode(g.pointers.data(), g.length, g.pointers.data() + k);
        const int n = k + m;
        int patterns = 0;
        for (unsigned mask = 0; mask < (1u << n); ++mask) {
            std::vector<int> lost;
            for (int i = 0; i < n; ++i)
                if (mask & (1u << i)) lost.push_back(i);
            if (static_cast<int>(lost.size()) > m) continue;
            INFO(k << "+" << m << ", lost mask " << mask);
            REQUIRE(rebuilds(code, g, lost));
            ++patterns;
        }
        INFO(k << "+" << m << ": " << patterns << " patterns");
        CHECK(patterns > n);
    }
}

TEST_CASE("erasure code: large groups rebuild random losses of up to m, and m + 1 leaves them lost") {
    std::mt19937 random(58);
    for (auto [k, m] : {std::pair{100, 12}, {200, 22}, {220, 34}}) {
        ErasureCode code(k, m);
        Group g(k, m, 8960, static_cast<unsigned>(k));
        code.encode(g.pointers.data(), g.length, g.pointers.data() + k);
        for (int trial = 0; trial < 40; ++trial) {
            const int count = 1 + static_cast<int>(random() % static_cast<unsigned>(m));
            std::vector<int> order(static_cast<std::size_t>(k + m));
            for (int i = 0; i < k + m; ++i) order[static_cast<std::size_t>(i)] = i;
            std::shuffle(order.begin(), order.end(), random);
            order.resize(static_cast<std::size_t>(trial == 0 ? m : count));  // once exactly m, all data
            if (trial == 1)
                for (int i = 0; i < m; ++i) order[static_cast<std::size_t>(i)] = i;
            INFO(k << "+" << m << ", trial " << trial << ", " << order.size() << " lost");
            REQUIRE(rebuilds(code, g, order));
        }
        // m + 1 data shards lost: nothing rebuilt, nothing written.
        std::vector<const std::uint8_t*> present(g.pointers.begin(), g.pointers.end());
        for (int i = 0; i <= m; ++i) present[static_cast<std::size_t>(i * (k / (m + 1)))] = nullptr;
        std::vector<std::uint8_t> out(g.length, 0x5A);
        std::vector<std::uint8_t*> outs(static_cast<std::size_t>(k), out.data());
        CHECK_FALSE(code.rebuild(present.data(), g.length, outs.data()));
        CHECK(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0x5A; }));
    }
}

TEST_CASE("erasure code: shards added one at a time make the whole encode's parity, shorter ones zero-padded") {
    const int k = 12, m = 3;
    ErasureCode code(k, m);
    Group g(k, m, 512, 3);
    // Shard i is only 100 + 30 i bytes long: the rest of it is zero, as a short datagram is padded.
    for (int i = 0; i < k; ++i)
        std::fill(g.shards[static_cast<std::size_t>(i)].begin() + 100 + 30 * i, g.shards[static_cast<std::size_t>(i)].end(), 0);
    code.encode(g.pointers.data(), g.length, g.pointers.data() + k);
    std::vector<std::vector<std::uint8_t>> parity(m, std::vector<std::uint8_t>(g.length, 0));
    std::vector<std::uint8_t*> parity_pointers;
    for (auto& p : parity) parity_pointers.push_back(p.data());
    for (int i = k - 1; i >= 0; --i)  // any order
        code.add(i, g.shards[static_cast<std::size_t>(i)].data(), static_cast<std::size_t>(100 + 30 * i), parity_pointers.data());
    for (int j = 0; j < m; ++j) CHECK(parity[static_cast<std::size_t>(j)] == g.shards[static_cast<std::size_t>(k + j)]);
    CHECK(rebuilds(code, g, {0, 5, 11}));
}

TEST_CASE("erasure code: codes outside 1..240 + 1..64, 255 in all, are refused") {
    CHECK_THROWS_AS(ErasureCode(0, 2), std::invalid_argument);
    CHECK_THROWS_AS(ErasureCode(4, 0), std::invalid_argument);
    CHECK_THROWS_AS(ErasureCode(241, 4), std::invalid_argument);
    CHECK_THROWS_AS(ErasureCode(200, 65), std::invalid_argument);
    CHECK_THROWS_AS(ErasureCode(220, 36), std::invalid_argument);
    CHECK_NOTHROW(ErasureCode(220, 35));
    ErasureCode code(4, 2);
    std::vector<std::uint8_t> shard(16), p0(16), p1(16);
    std::uint8_t* parity[2] = {p0.data(), p1.data()};
    CHECK_THROWS_AS(code.add(4, shard.data(), shard.size(), parity), std::out_of_range);
    CHECK_THROWS_AS(code.add(-1, shard.data(), shard.size(), parity), std::out_of_range);
}
