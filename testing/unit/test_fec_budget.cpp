// What a stream with forward error correction asks of the rest: `--fec`
// read as written or refused by name, and packets 16 bytes shorter
// (fec::kMaxShardBytes) in every wire format, codec and order, so that a
// packet behind its shim, and its parity, fit the datagram a packet fills
// without FEC.
#include "shuffle/slab_walker.h"

#include "slabcast/fec_packet.h"
#include "slabcast/fec_sender.h"
#include "slabcast/quad_packet.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using namespace slabcast;

TEST_CASE("--fec reads K+M[/DEPTH] and none, and names what is wrong") {
    CHECK_FALSE(fec::parse_choice("none").on());
    const fec::Choice c = fec::parse_choice("200+22");
    CHECK((c.on() && c.k == 200 && c.m == 22 && c.depth == fec::Choice::kDefaultDepth));
    const fec::Choice d = fec::parse_choice("220+28/1");
    CHECK((d.k == 220 && d.m == 28 && d.depth == 1));
    CHECK(fec::to_string(d) == "220+28/1");
    CHECK(fec::to_string(fec::parse_choice(fec::to_string(c))) == fec::to_string(c));
    CHECK(fec::to_string(fec::parse_choice("none")) == "none");
    for (const char* bad : {"", "200", "+22", "200+", "200+0", "0+4", "241+1", "200+65", "200+60", "8+2/0", "8+2/65",
                            "8+2/", "x+2", "8+2/4/4", "-1+2", "8+2 "}) {
        INFO(bad);
        try {
            fec::parse_choice(bad);
            FAIL("accepted");
        } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()).find("FEC '" + std::string(bad) + "'") == 0);
        }
    }
}

TEST_CASE("with FEC every packet fits its shard: every wire format, codec and order") {
    const Dims dims{300, 40, 9};
    std::vector<float> planes(static_cast<std::size_t>(dims.count()));
    for (std::size_t i = 0; i < planes.size(); ++i) planes[i] = static_cast<float>(std::sin(0.001 * i) * 100.0);
    struct Kind {
        WireFormat wire;
        const char* codec;
        SendOrder order;
    };
    const Kind kinds[] = {{WireFormat::Quad, "none", SendOrder::Scan},    {WireFormat::Quad, "none", SendOrder::Morton},
                          {WireFormat::Run, "none", SendOrder::Scan},     {WireFormat::Run, "none", SendOrder::Progressive},
                          {WireFormat::Run, "none", SendOrder::Morton},   {WireFormat::Run, "lz4", SendOrder::Scan},
                          {WireFormat::Run, "zfp:8", SendOrder::Scan},    {WireFormat::Run, "zfp:32", SendOrder::Scan},
                          {WireFormat::Run, "quant:10", SendOrder::Progressive}};
    std::vector<std::uint8_t> packet(quad::kMaxPacketBytes);
    for (const Kind& kind : kinds) {
        INFO(run::to_string(run::parse_codec(kind.codec)) << (kind.wire == WireFormat::Quad ? " quad" : " run")
                                                          << " order " << static_cast<int>(kind.order));
        SlabWalker walker(dims, 0, dims.nz, kind.order, kind.wire, run::parse_codec(kind.codec), 0,
                          fec::kMaxShardBytes);
        std::uint64_t values = 0, packets = 0;
        std::size_t longest = 0;
        for (;;) {
            const run::RunEncoder::Packet p = walker.pack(packet.data(), planes.data(), 3, 0);
            if (p.count == 0) break;
            REQUIRE(p.bytes <= fec::kMaxShardBytes);
            // What the receiver reads of a rebuilt shard is the packet's own length.
            REQUIRE(fec::inner_length(packet.data(), fec::kMaxShardBytes) == p.bytes);
            longest = std::max(longest, p.bytes);
            values += static_cast<std::uint64_t>(p.count);
            ++packets;
        }
        CHECK(values == static_cast<std::uint64_t>(dims.count()));
        CHECK(packets <= walker.total_packets());
        // (Morton order's run packets are tiles of whole rows: a full one may be shorter.)
        if (walker.fixed_packet_bytes()) CHECK(longest <= walker.fixed_packet_bytes());
        if (walker.fixed_packet_bytes() && kind.order == SendOrder::Scan) CHECK(longest == walker.fixed_packet_bytes());
    }
    // The most a full packet holds with FEC: a run of 2229 raw values, 559 quad records.
    CHECK(SlabWalker(dims, 0, dims.nz, SendOrder::Scan, WireFormat::Run, {}, 0, fec::kMaxShardBytes)
              .fixed_packet_bytes() == run::packet_bytes(2229));
    CHECK(SlabWalker(dims, 0, dims.nz, SendOrder::Scan, WireFormat::Quad, {}, 0, fec::kMaxShardBytes)
              .fixed_packet_bytes() == quad::packet_bytes(559));
    CHECK_THROWS_AS(run::RunEncoder({}, 100), std::invalid_argument);
    CHECK_THROWS_AS(run::RunEncoder({}, quad::kMaxPacketBytes + 1), std::invalid_argument);
}
