// The quant codec (slabcast/quant_codec.h): every value within its stated
// bound, half a level plus float32's rounding, whatever the values (NaN,
// infinities, denormals, a constant run, thirty decades); golden bytes of one
// packet; and every payload that is not exactly one encoding refused. Each
// with the portable loops and with the AVX2 kernels (where the CPU has them),
// and the two against each other.
#include "slabcast/run_codec.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace slabcast;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Coded {
    std::vector<std::uint8_t> packet;
    run::Header header;
    const float* values = nullptr;  // decoded, valid while the decoder lives
};

Coded code(run::RunEncoder& e, run::RunDecoder& d, const float* values, std::int64_t available) {
    Coded c;
    c.packet.resize(run::kMaxPacketBytes);
    run::Header h;
    h.step = 7;
    const run::RunEncoder::Packet p = e.encode(values, available, h, c.packet.data());
    c.packet.resize(p.bytes);
    REQUIRE(run::parse_header(c.packet.data(), c.packet.size(), c.header) == run::ParseResult::Ok);
    REQUIRE(c.header.count == p.count);
    c.values = d.decode(c.header, run::payload(c.packet.data()));
    REQUIRE(c.values);
    return c;
}

// Runs `check` with the portable loops, reported in use (a test of them
// must not pass on the AVX2 kernels), then with the AVX2 kernels where the
// CPU has them; the best available again after, however `check` ended.
template <class Check>
void with_each_kernels(Check check) {
    struct BestAgain {
        ~BestAgain() { run::allow_quant_kernels(run::QuantKernels::Avx2); }
    } best_again;
    REQUIRE(run::allow_quant_kernels(run::QuantKernels::Portable) == run::QuantKernels::Portable);
    {
        INFO("the portable loops");
        check();
    }
    if (run::allow_quant_kernels(run::QuantKernels::Avx2) != run::QuantKernels::Avx2) {
        WARN("this CPU has no AVX2 and FMA: only the portable loops were tested");
        return;
    }
    INFO("the AVX2 kernels");
    check();
}

// Every value of a run, packet by packet, within the bound its packet states,
// with each kernel set.
void check_round_trip(const std::vector<float>& v, int bits) {
    with_each_kernels([&] {
        run::RunEncoder e(run::CodecChoice{run::Codec::Quant, static_cast<std::uint16_t>(bits)});
        run::RunDecoder d;
        std::size_t done = 0;
        while (done < v.size()) {
            const Coded c = code(e, d, v.data() + done, static_cast<std::int64_t>(v.size() - done));
            if (c.header.codec == run::Codec::Quant) {
                float q = 0;
                std::memcpy(&q, run::payload(c.packet.data()) + 4, 4);
                for (int i = 0; i < c.header.count; ++i) {
                    const float x = v[done + static_cast<std::size_t>(i)], y = c.values[i];
                    const double bound = 0.5 * q + 0.5 * (std::nextafter(std::fabs(y), kInf) - std::fabs(y));
                    INFO("bits " << bits << ", value " << done + i << ": " << x << " came back " << y << ", q " << q);
                    REQUIRE(std::fabs(static_cast<double>(y) - x) <= bound);
                }
            } else {
                REQUIRE(c.header.codec == run::Codec::None);  // a run that begins with a value not finite
                REQUIRE(std::memcmp(c.values, v.data() + done,
                                    sizeof(float) * static_cast<std::size_t>(c.header.count)) == 0);
            }
            done += static_cast<std::size_t>(c.header.count);
        }
    });
}

std::vector<float> density(std::size_t n) {
    std::mt19937 rng(3);
    std::normal_distribution<float> noise(0.0f, 0.01f);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(std::exp(2.0 * std::sin(static_cast<double>(i) * 0.002))) + noise(rng);
    return v;
}

}  // namespace

TEST_CASE("quant:BITS is a codec, BITS 4 to 16") {
    const run::CodecChoice c = run::parse_codec("quant:10");
    CHECK((c.codec == run::Codec::Quant && c.parameter == 10));
    CHECK(run::to_string(c) == "quant:10");
    CHECK_THROWS_WITH(run::parse_codec("quant:3"), Catch::Contains("4 to 16"));
    CHECK_THROWS_WITH(run::parse_codec("quant:17"), Catch::Contains("4 to 16"));
    CHECK_THROWS_WITH(run::parse_codec("quant:"), Catch::Contains("4 to 16"));
    CHECK(run::max_values(run::Codec::Quant, 3) == 0);
    CHECK(run::max_values(run::Codec::Quant, 16) == run::kMaxQuantValues);
}

TEST_CASE("quant values come back within half a level, at every precision") {
    const std::vector<float> v = density(50000);
    for (int bits = run::kMinQuantBits; bits <= run::kMaxQuantBits; ++bits) check_round_trip(v, bits);
}

TEST_CASE("quant keeps its bound on hostile values") {
    std::vector<float> v = density(20000);
    SECTION("NaN and infinities: raw from each, quant up to it") {
        v[0] = kNaN;
        v[5000] = kInf;
        v[12345] = -kInf;
        v[12346] = kNaN;
        check_round_trip(v, 8);
    }
    SECTION("denormals") {
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i % 97);
        check_round_trip(v, 6);
    }
    SECTION("a constant run codes in a byte a block, exactly") {
        std::fill(v.begin(), v.end(), 3.25f);
        with_each_kernels([&] {
            run::RunEncoder e(run::parse_codec("quant:12"));
            run::RunDecoder d;
            const Coded c = code(e, d, v.data(), static_cast<std::int64_t>(v.size()));
            CHECK(c.header.count == run::kMaxQuantValues);
            CHECK(c.header.payload_bytes == run::kQuantHeaderBytes + run::kMaxQuantValues / run::kQuantBlock);
            for (int i = 0; i < c.header.count; ++i) REQUIRE(c.values[i] == 3.25f);
        });
    }
    SECTION("thirty decades, both signs, the float range's ends") {
        std::mt19937 rng(9);
        std::uniform_real_distribution<double> decade(-15.0, 15.0);
        for (float& x : v) x = static_cast<float>(std::pow(10.0, decade(rng)) * (rng() % 2 ? 1 : -1));
        check_round_trip(v, 16);
        v[100] = std::numeric_limits<float>::max();
        v[200] = -std::numeric_limits<float>::max();
        check_round_trip(v, 4);
        // The top level a hair past float32's largest (fuzz_run_decode found it): the largest, not infinity.
        v[0] = -3.2288184e38f;
        for (int bits = run::kMinQuantBits; bits <= run::kMaxQuantBits; ++bits) check_round_trip(v, bits);
    }
}

TEST_CASE("a quant run packet matches golden bytes") {
    run::RunEncoder e(run::parse_codec("quant:4"));
    run::RunDecoder d;
    const float values[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    const Coded c = code(e, d, values, 4);
    // Levels over [0, 3]: q = 0.2 (as float32, 0x3e4ccccd), levels 0, 5, 10, 15; differences 0, 5, 5, 5,
    // zigzagged 0, 10, 10, 10 at 4 bits (10 = 0b1010), first value in the lowest bits.
    const std::vector<std::uint8_t> payload = {0x00, 0x00, 0x00, 0x00, 0xcd, 0xcc, 0x4c, 0x3e, 0x04, 0xa0, 0xaa};
    CHECK(c.packet[5] == static_cast<std::uint8_t>(run::Codec::Quant));
    CHECK(c.packet[6] == 4);
    CHECK(std::vector<std::uint8_t>(c.packet.begin() + run::kHeaderBytes, c.packet.end()) == payload);
    for (int i = 0; i < 4; ++i) CHECK(c.values[i] == values[i]);
}

TEST_CASE("a quant payload that is not exactly one encoding is refused") {
    with_each_kernels([&] {
        const std::vector<float> v = density(3000);
        run::RunEncoder e(run::parse_codec("quant:10"));
        run::RunDecoder d;
        const Coded c = code(e, d, v.data(), 100);  // 100 values: three full blocks and one of four
        const std::uint8_t* payload = run::payload(c.packet.data());
        const std::size_t bytes = c.header.payload_bytes;
        std::vector<float> out(run::kMaxQuantValues);
        REQUIRE(run::quant_decode(payload, bytes, 100, 10, out.data()));
        for (std::size_t n = 0; n < bytes; ++n) CHECK_FALSE(run::quant_decode(payload, n, 100, 10, out.data()));
        std::vector<std::uint8_t> longer(payload, payload + bytes);
        longer.push_back(0);
        CHECK_FALSE(run::quant_decode(longer.data(), longer.size(), 100, 10, out.data()));
        CHECK_FALSE(run::quant_decode(payload, bytes, 101, 10, out.data()));  // more values than coded
        CHECK_FALSE(run::quant_decode(payload, bytes, 99, 10, out.data()));   // fewer: bytes left over
        const auto altered = [&](std::size_t at, std::uint8_t value) {
            std::vector<std::uint8_t> p(payload, payload + bytes);
            p[at] = value;
            return run::quant_decode(p.data(), p.size(), 100, 10, out.data());
        };
        CHECK_FALSE(altered(8, 12));  // the first block's width past BITS + 1
        // One value at 4 bits (levels 0..15), lo and q as given (0 and 1 unless
        // said): its 5-bit zigzagged difference, then bits past it.
        const auto one = [&](std::uint8_t width, std::uint8_t packed, float lo = 0.0f, float q = 1.0f) {
            std::vector<std::uint8_t> p(run::kQuantHeaderBytes + 2);
            std::memcpy(p.data(), &lo, 4);
            std::memcpy(p.data() + 4, &q, 4);
            p[8] = width;
            p[9] = packed;
            return run::quant_decode(p.data(), p.size(), 1, 4, out.data());
        };
        CHECK_FALSE(one(5, 30, kNaN));
        CHECK_FALSE(one(5, 30, -kInf));
        CHECK_FALSE(one(5, 30, 0.0f, kInf));
        CHECK_FALSE(one(5, 30, 0.0f, -1.0f));
        CHECK(one(5, 30));               // +15: the last level
        CHECK(out[0] == 15.0f);
        CHECK_FALSE(one(5, 31));         // -16: below the first level
        CHECK_FALSE(one(5, 30 | 0x80));  // a bit set past the value
        CHECK_FALSE(one(6, 30));         // a width past BITS + 1
    });
}

namespace {

// The next tests hold the codec to the format written out plainly, with
// each kernel set (with_each_kernels): full blocks go through the portable
// loops and then through the AVX2 kernels where the CPU has them, a packet's
// short last block through the portable loops always.

// A payload of the given levels written out plainly as quant_codec.h reads:
// lo and q, then for each block of 32 the width its largest zigzagged
// difference needs and the differences, least significant bit first.
std::vector<std::uint8_t> plain_payload(const std::vector<std::int32_t>& levels, float lo, float q) {
    std::vector<std::uint8_t> p(run::kQuantHeaderBytes);
    std::memcpy(p.data(), &lo, 4);
    std::memcpy(p.data() + 4, &q, 4);
    std::int32_t previous = 0;
    for (std::size_t done = 0; done < levels.size(); done += run::kQuantBlock) {
        std::vector<std::uint32_t> zig;
        for (std::size_t i = done; i < std::min(levels.size(), done + run::kQuantBlock); ++i) {
            const std::int32_t d = levels[i] - previous;
            zig.push_back((static_cast<std::uint32_t>(d) << 1) ^ static_cast<std::uint32_t>(d >> 31));
            previous = levels[i];
        }
        int width = 0;
        for (const std::uint32_t z : zig)
            while ((z >> width) != 0) ++width;
        p.push_back(static_cast<std::uint8_t>(width));
        for (std::size_t bit = 0; bit < zig.size() * static_cast<std::size_t>(width); ++bit) {
            if (bit % 8 == 0) p.push_back(0);
            p.back() |= static_cast<std::uint8_t>(((zig[bit / static_cast<std::size_t>(width)] >> (bit % width)) & 1)
                                                  << (bit % 8));
        }
    }
    return p;
}

}  // namespace

TEST_CASE("quant decodes every width bit for bit as the format reads") {
    with_each_kernels([&] {
        std::mt19937 rng(11);
        // lo and q of many bits, so that lo + level * q rounded twice (the
        // product, then the sum) differs from rounded once.
        std::uniform_real_distribution<float> any_lo(-100.0f, 100.0f), any_q(1e-4f, 1.0f);
        for (int bits = run::kMinQuantBits; bits <= run::kMaxQuantBits; ++bits) {
            const std::int32_t top = (1 << bits) - 1;
            for (const int count : {32, 64, 100, 1000, run::kMaxQuantValues}) {
                // Each block's levels step by at most a reach of its own, so that
                // the blocks need every width from 0 (a constant block) to BITS + 1.
                std::vector<std::int32_t> levels;
                std::int32_t level = static_cast<std::int32_t>(rng() % static_cast<std::uint32_t>(top + 1));
                for (int done = 0; done < count; done += run::kQuantBlock) {
                    const std::int32_t reach = top >> (rng() % static_cast<std::uint32_t>(bits + 2));
                    for (int j = 0; j < std::min(run::kQuantBlock, count - done); ++j) {
                        const auto step = static_cast<std::int32_t>(rng() % static_cast<std::uint32_t>(2 * reach + 1));
                        level = std::clamp(level + step - reach, 0, top);
                        levels.push_back(level);
                    }
                }
                const float lo = any_lo(rng), q = any_q(rng);
                INFO("bits " << bits << ", " << count << " values, lo " << lo << ", q " << q);
                const std::vector<std::uint8_t> p = plain_payload(levels, lo, q);
                std::vector<float> out(static_cast<std::size_t>(count));
                REQUIRE(run::quant_decode(p.data(), p.size(), count, bits, out.data()));
                for (std::size_t i = 0; i < levels.size(); ++i)
                    REQUIRE(out[i] == std::fma(static_cast<float>(levels[i]), q, lo));
            }
        }
    });
}

TEST_CASE("quant refuses a level past either end in a full block as in a short one") {
    with_each_kernels([&] {
        std::vector<float> out(run::kMaxQuantValues);
        for (const int count : {32, 40, 64, 5000}) {
            for (const std::size_t at : {std::size_t{0}, std::size_t{17}, std::size_t{31}, std::size_t(count - 1)}) {
                std::vector<std::int32_t> levels(static_cast<std::size_t>(count), 1000);
                INFO(count << " values, the level at " << at);
                const std::vector<std::uint8_t> within = plain_payload(levels, 0, 1);
                REQUIRE(run::quant_decode(within.data(), within.size(), count, 10, out.data()));
                levels[at] = 1024;
                const std::vector<std::uint8_t> above = plain_payload(levels, 0, 1);
                CHECK_FALSE(run::quant_decode(above.data(), above.size(), count, 10, out.data()));
                levels[at] = -1;
                const std::vector<std::uint8_t> below = plain_payload(levels, 0, 1);
                CHECK_FALSE(run::quant_decode(below.data(), below.size(), count, 10, out.data()));
            }
        }
    });
}

TEST_CASE("quant encodes each value at its nearest level, bit for bit as the format writes") {
    std::vector<float> v = density(3 * run::kMaxQuantValues);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> anywhere(-1e6f, 1e6f);
    for (std::size_t i = 40000; i < v.size(); ++i) v[i] = anywhere(rng);  // the last packets: no smoothness at all
    with_each_kernels([&] {
        std::vector<std::uint8_t> out(run::kMaxPayloadBytes);
        for (int bits = run::kMinQuantBits; bits <= run::kMaxQuantBits; ++bits) {
            std::size_t done = 0;
            while (done < v.size()) {
                const run::QuantPacket p = run::quant_encode(
                    v.data() + done, static_cast<std::int64_t>(v.size() - done), bits, out.data(), out.size());
                REQUIRE(p.count > 0);
                float lo = 0, q = 0;
                std::memcpy(&lo, out.data(), 4);
                std::memcpy(&q, out.data() + 4, 4);
                const double inverse = 1.0 / static_cast<double>(q);
                std::vector<std::int32_t> levels;
                for (int i = 0; i < p.count; ++i) {
                    const double x = v[done + static_cast<std::size_t>(i)];
                    levels.push_back(std::min((1 << bits) - 1, static_cast<std::int32_t>((x - lo) * inverse + 0.5)));
                }
                INFO("bits " << bits << ", the packet from value " << done);
                const std::vector<std::uint8_t> plain = plain_payload(levels, lo, q);
                REQUIRE(p.bytes == plain.size());
                REQUIRE(std::memcmp(out.data(), plain.data(), p.bytes) == 0);
                done += static_cast<std::size_t>(p.count);
            }
        }
    });
}

TEST_CASE("quant's portable loops and AVX2 kernels give the same bytes, verdicts and values") {
    std::vector<float> v = density(2 * run::kMaxQuantValues);
    std::mt19937 rng(13);
    std::uniform_real_distribution<float> anywhere(-1e6f, 1e6f);
    for (std::size_t i = run::kMaxQuantValues; i < v.size(); ++i) v[i] = anywhere(rng);
    // Payloads to decode, written out plainly: levels anywhere, then the
    // same with one byte changed (a width, lo or q, a level out of range).
    struct Input {
        std::vector<std::uint8_t> payload;
        int count, bits;
    };
    std::vector<Input> inputs;
    std::uniform_real_distribution<float> any_lo(-100.0f, 100.0f), any_q(1e-4f, 1.0f);
    for (int bits = run::kMinQuantBits; bits <= run::kMaxQuantBits; ++bits) {
        for (const int count : {32, 100, 1000, run::kMaxQuantValues}) {
            std::vector<std::int32_t> levels(static_cast<std::size_t>(count));
            for (std::int32_t& level : levels) level = static_cast<std::int32_t>(rng() % (1u << bits));
            const std::vector<std::uint8_t> plain = plain_payload(levels, any_lo(rng), any_q(rng));
            inputs.push_back({plain, count, bits});
            for (int k = 0; k < 8; ++k) {
                std::vector<std::uint8_t> changed = plain;
                changed[rng() % changed.size()] = static_cast<std::uint8_t>(rng());
                inputs.push_back({changed, count, bits});
            }
        }
    }
    std::vector<std::vector<std::uint8_t>> encoded;  // each kernel set's packets, one after another
    std::vector<std::vector<bool>> verdicts;
    std::vector<std::vector<std::uint32_t>> decoded;  // the bits of every value of each payload accepted
    with_each_kernels([&] {
        std::vector<std::uint8_t> packets, out(run::kMaxPayloadBytes);
        for (int bits = run::kMinQuantBits; bits <= run::kMaxQuantBits; ++bits) {
            for (std::size_t done = 0; done < v.size();) {
                const run::QuantPacket p = run::quant_encode(
                    v.data() + done, static_cast<std::int64_t>(v.size() - done), bits, out.data(), out.size());
                REQUIRE(p.count > 0);
                packets.insert(packets.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(p.bytes));
                done += static_cast<std::size_t>(p.count);
            }
        }
        encoded.push_back(packets);
        verdicts.emplace_back();
        decoded.emplace_back();
        for (const Input& in : inputs) {
            std::vector<float> values(static_cast<std::size_t>(in.count));
            verdicts.back().push_back(
                run::quant_decode(in.payload.data(), in.payload.size(), in.count, in.bits, values.data()));
            if (!verdicts.back().back()) continue;
            std::vector<std::uint32_t> raw(values.size());
            std::memcpy(raw.data(), values.data(), sizeof(float) * values.size());
            decoded.back().insert(decoded.back().end(), raw.begin(), raw.end());
        }
    });
    if (encoded.size() < 2) return;  // with_each_kernels said why
    CHECK(encoded[0] == encoded[1]);
    CHECK(verdicts[0] == verdicts[1]);
    CHECK(decoded[0] == decoded[1]);
    // Both kinds of payload were decoded, some accepted and some refused.
    CHECK(std::count(verdicts[0].begin(), verdicts[0].end(), true) > 0);
    CHECK(std::count(verdicts[0].begin(), verdicts[0].end(), false) > 0);
}
