// The progressive send order, end to end in one process: the order of rows
// (a permutation, coarse first, parents earlier), the walker's quad and run
// packets (every codec; exactly the records of scan order), the receiver
// placing them in real shared memory, and the `nearest` fill of a step cut
// short, against the `previous` fill.
#include "receive/slab_receiver.h"
#include "shuffle/slab_walker.h"
#include "temp_shm_dir.h"

#include "slabcast/progressive_rows.h"
#include "slabcast/publication.h"
#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"
#include "slabcast/run_packet.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <cmath>
#include <set>
#include <string>
#include <vector>

using namespace slabcast;

TEST_CASE("the progressive order is a permutation of the rows: ghost rows first, then each owned row after its parent") {
    for (const auto& [ny, owned, ghost] : std::vector<std::array<std::int64_t, 3>>{{8, 4, 1}, {7, 5, 0}, {1, 1, 1},
                                                                                   {256, 33, 1}, {12, 1, 0}}) {
        const ProgressiveRows rows(ny, owned, ghost);
        REQUIRE(rows.rows() == ny * (owned + ghost));
        std::set<std::int64_t> seen;
        for (std::int64_t r = 0; r < rows.rows(); ++r) {
            const std::int64_t row = rows.row_at(r);
            REQUIRE(rows.rank_of(row) == r);
            seen.insert(row);
            // The ghost plane first, as stored: a sender with no ghost plane walks the rest.
            REQUIRE((r < ghost * ny) == (row < ghost * ny));
            if (r < ghost * ny) {
                REQUIRE(row == r);
                REQUIRE(rows.parent(row) == ghost * ny + row % ny);  // the same y, first owned plane
                continue;
            }
            // Every owned row's parent comes before it; the first is the root.
            const std::int64_t parent = rows.parent(row);
            if (r == ghost * ny) {
                REQUIRE(row == ghost * ny);
                REQUIRE(parent == -1);
            } else {
                REQUIRE(parent >= ghost * ny);
                REQUIRE(rows.rank_of(parent) < r);
            }
        }
        REQUIRE(seen.size() == static_cast<std::size_t>(rows.rows()));
    }
}

TEST_CASE("any power-of-two prefix of the order is the slab sampled at coarser strides, equal in y and z") {
    const std::int64_t ny = 16, planes = 16;
    const ProgressiveRows rows(ny, planes, 0);
    // The first 4^k rows: y and p multiples of 16 / 2^k.
    for (int k = 0; k <= 4; ++k) {
        const std::int64_t n = std::int64_t{1} << (2 * k), stride = 16 >> k;
        std::set<std::int64_t> prefix;
        for (std::int64_t r = 0; r < n; ++r) prefix.insert(rows.row_at(r));
        std::set<std::int64_t> grid;
        for (std::int64_t p = 0; p < planes; p += stride)
            for (std::int64_t y = 0; y < ny; y += stride) grid.insert(p * ny + y);
        REQUIRE(prefix == grid);
    }
    // A parent lies one coarser stride below its row, along y or z.
    REQUIRE(rows.parent(3) == 2);            // (y 3, p 0) -> (2, 0)
    REQUIRE(rows.parent(2) == 0);            // (2, 0) -> (0, 0)
    REQUIRE(rows.parent(4 * ny + 4) == 4 * ny);  // (4, 4): y's bit 2 before p's bit 2 -> (0, 4)
    REQUIRE(rows.parent(2 * ny + 4) == 4);   // (4, 2): p's bit 1 is lower -> (4, 0)
}

TEST_CASE("sizes the progressive order cannot take are refused") {
    REQUIRE_THROWS_AS(ProgressiveRows(0, 4, 1), std::invalid_argument);
    REQUIRE_THROWS_AS(ProgressiveRows(8, 0, 1), std::invalid_argument);
    REQUIRE_THROWS_AS(ProgressiveRows(8, 4, -1), std::invalid_argument);
    REQUIRE_THROWS_AS(ProgressiveRows(std::int64_t{1} << 20, std::int64_t{1} << 20, 1), std::invalid_argument);
    // Sizes whose product would wrap a 64-bit number are refused, not wrapped.
    REQUIRE_THROWS_AS(ProgressiveRows(std::int64_t{1} << 32, std::int64_t{1} << 32, std::int64_t{1} << 32),
                      std::invalid_argument);
    REQUIRE_THROWS_AS(ProgressiveRows(std::int64_t{1} << 62, 4, 0), std::invalid_argument);
}

namespace {

const Dims kDims{8, 8, 12};  // 3 slabs of depth 4, one ghost plane
constexpr int kDepth = 4;
constexpr int kSlab = 1;

float value_at(int step, std::int64_t volume_index) { return static_cast<float>(step * 10000 + volume_index); }

std::vector<float> volume_of(int step) {
    std::vector<float> v(static_cast<std::size_t>(kDims.count()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = value_at(step, static_cast<std::int64_t>(i));
    return v;
}

// Every packet of one step of slab 1 (ghost plane included) in `order`.
std::vector<std::vector<std::uint8_t>> packets_of(int step, SendOrder order, WireFormat wire,
                                                  const std::string& codec = "none") {
    const SlabGeometry g = slab_geometry(kDims, kDepth, kSlab, 1);
    SlabWalker w(kDims, g.stored_z_begin, g.z_end, order, wire, run::parse_codec(codec), g.ghost_planes());
    const std::vector<float> volume = volume_of(step);
    std::vector<std::vector<std::uint8_t>> out;
    for (;;) {
        std::vector<std::uint8_t> p(quad::kMaxPacketBytes);
        if (wire == WireFormat::Quad) {
            const int n = w.fill(p.data(), volume.data());
            if (n == 0) break;
            quad::write_header(p.data(), step, n);
            p.resize(quad::packet_bytes(n));
        } else {
            const run::RunEncoder::Packet got = w.fill_run(p.data(), volume.data(), step, kSlab);
            if (got.count == 0) break;
            p.resize(got.bytes);
        }
        out.push_back(std::move(p));
    }
    REQUIRE(static_cast<std::uint64_t>(out.size()) <= w.total_packets());
    return out;
}

struct Receiving {
    TempShmDir dir;
    SlabGeometry geometry = slab_geometry(kDims, kDepth, kSlab, 1);
    SlabMapping slab = SlabMapping::create(dir.file("t.slab1"), kDims, kDepth, geometry, "density");
    std::vector<StepReport> reports;
    SlabReceiver receiver{kSlab, slab, [this](const StepReport& r) { reports.push_back(r); }};

    void send(const std::vector<std::uint8_t>& p) {
        REQUIRE(receiver.handle(p.data(), p.size(), 1'000'000'000) == PacketVerdict::Stored);
    }
    // The first `share` of step `step`'s packets, then the step ends.
    void send_cut(int step, SendOrder order, double share) {
        const auto packets = packets_of(step, order, WireFormat::Run);
        const auto n = static_cast<std::size_t>(std::ceil(share * static_cast<double>(packets.size())));
        for (std::size_t i = 0; i < n; ++i) send(packets[i]);
        receiver.finish_current();
    }
    const float* values() const { return slab.values(newest_publication(slab)->buffer); }
    const std::uint8_t* ages() const { return slab.ages(newest_publication(slab)->buffer); }
    std::int64_t stored() const { return static_cast<std::int64_t>(slab.value_count()); }
    float truth(int step, std::int64_t i) const { return value_at(step, geometry.stored_z_begin * kDims.plane() + i); }
};

}  // namespace

TEST_CASE("progressive quad and run packets, in every codec, carry exactly the records of scan order and land whole") {
    for (const WireFormat wire : {WireFormat::Quad, WireFormat::Run}) {
        for (const std::string codec : {"none", "lz4", "zfp:32"}) {
            if (wire == WireFormat::Quad && codec != "none") continue;
            Receiving r;
            const auto packets = packets_of(3, SendOrder::Progressive, wire, codec);
            for (const auto& p : packets) {
                if (wire == WireFormat::Run) {
                    run::Header h;
                    REQUIRE(run::parse_header(p.data(), p.size(), h) == run::ParseResult::Ok);
                    REQUIRE(h.progressive);
                }
                r.send(p);
            }
            REQUIRE(r.reports.size() == 1);
            REQUIRE(r.reports[0].complete);
            REQUIRE(r.reports[0].duplicates == 0);
            const float tolerance = codec == "zfp:32" ? 1e-3f : 0.f;
            for (std::int64_t i = 0; i < r.stored(); ++i) {
                INFO("wire " << static_cast<int>(wire) << " codec " << codec << " value " << i);
                REQUIRE(std::abs(r.values()[i] - r.truth(3, i)) <= tolerance * std::abs(r.truth(3, i)));
                REQUIRE(r.ages()[i] == 0);
            }
        }
    }
}

TEST_CASE("a progressive packet's first rows arrive first: a run packet spans rows in the order") {
    const auto packets = packets_of(0, SendOrder::Progressive, WireFormat::Run);
    // 5 stored planes of 8x8 = 320 values in one raw run packet.
    REQUIRE(packets.size() == 1);
    run::Header h;
    REQUIRE(run::parse_header(packets[0].data(), packets[0].size(), h) == run::ParseResult::Ok);
    REQUIRE(h.count == 320);
    REQUIRE((h.x == 0 && h.y == 0 && h.z == kSlab * kDepth - 1));  // (0, 0) of the ghost plane
    // The values follow the order: the ghost plane's 8 rows, then (y 0, the first owned plane), (y 4, p 0), (y 0, p 2).
    const ProgressiveRows rows(kDims.ny, kDepth, 1);
    const float* v = reinterpret_cast<const float*>(run::payload(packets[0].data()));
    const SlabGeometry g = slab_geometry(kDims, kDepth, kSlab, 1);
    for (std::int64_t rank = 0; rank < rows.rows(); ++rank)
        for (std::int64_t x = 0; x < kDims.nx; ++x)
            REQUIRE(v[rank * kDims.nx + x] ==
                    value_at(0, g.stored_z_begin * kDims.plane() + rows.row_at(rank) * kDims.nx + x));
}

TEST_CASE("a hostile progressive run is rejected whole: outside the order, another slab, or a slab too long for it") {
    Receiving r;
    const auto packets = packets_of(0, SendOrder::Progressive, WireFormat::Run, "none");
    std::vector<std::uint8_t> p = packets[0];
    run::Header h;
    REQUIRE(run::parse_header(p.data(), p.size(), h) == run::ParseResult::Ok);
    // Its first voxel at the order's last row: 320 values cannot follow it.
    const ProgressiveRows rows(kDims.ny, kDepth, 1);
    const std::int64_t last = rows.row_at(rows.rows() - 1);
    h.x = 1;
    h.y = static_cast<std::int32_t>(last % kDims.ny);
    h.z = static_cast<std::int32_t>(r.geometry.stored_z_begin + last / kDims.ny);
    run::write_header(p.data(), h);
    REQUIRE(r.receiver.handle(p.data(), p.size(), 1'000'000'000) == PacketVerdict::Rejected);
    // The same run shortened to what is left from there fits exactly.
    h.count = static_cast<std::int32_t>(kDims.nx - 1);
    h.payload_bytes = 0;
    std::vector<std::uint8_t> fits(run::packet_bytes(h.count));
    std::memcpy(run::write_header(fits.data(), h), run::payload(p.data()), sizeof(float) * (kDims.nx - 1));
    REQUIRE(r.receiver.handle(fits.data(), fits.size(), 1'000'000'000) == PacketVerdict::Stored);
    // Bits 4 to 6 of the codec byte are not a codec.
    std::vector<std::uint8_t> odd = packets[0];
    odd[5] |= 0x10;
    REQUIRE(run::parse_header(odd.data(), odd.size(), h) == run::ParseResult::BadCodec);
    REQUIRE(r.receiver.handle(odd.data(), odd.size(), 1'000'000'000) == PacketVerdict::Rejected);
}

TEST_CASE("a step cut short with nothing to fall back on: progressive + nearest shows the whole new step, coarsely") {
    // Each packet of 8 x 8 slabs is one whole run; make them smaller so a cut falls between rows.
    // The ghost plane comes first: a fifth of these small slabs' rows.
    for (const double share : {0.25, 0.5, 0.75}) {
        Receiving scan, progressive;
        progressive.receiver.set_fill(FillRule::Nearest);
        // Quad packets carry 560 values, a run packet all 320: cut by records instead, in quad packets of the order.
        const auto cut_quads = [&](Receiving& r, SendOrder order) {
            const SlabGeometry g = r.geometry;
            SlabWalker w(kDims, g.stored_z_begin, g.z_end, order, WireFormat::Quad, {}, g.ghost_planes());
            const std::vector<float> volume = volume_of(5);
            std::vector<std::uint8_t> p(quad::kMaxPacketBytes);
            const int n = w.fill(p.data(), volume.data());  // all 320 records
            const int keep = static_cast<int>(share * n);
            quad::write_header(p.data(), 5, keep);
            r.send(std::vector<std::uint8_t>(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(quad::packet_bytes(keep))));
            r.receiver.finish_current();
        };
        cut_quads(scan, SendOrder::Scan);
        cut_quads(progressive, SendOrder::Progressive);
        double scan_error = 0, progressive_error = 0;
        std::int64_t coarse = 0, never = 0;
        for (std::int64_t i = 0; i < scan.stored(); ++i) {
            scan_error += std::pow(scan.values()[i] - scan.truth(5, i), 2);
            progressive_error += std::pow(progressive.values()[i] - progressive.truth(5, i), 2);
            coarse += progressive.ages()[i] == kAgeCoarse;
            never += progressive.ages()[i] == kAgeNeverArrived;
        }
        INFO("share " << share << " scan " << scan_error << " progressive " << progressive_error);
        REQUIRE(never == 0);  // every value has a coarser sample of the step
        REQUIRE(coarse == static_cast<std::int64_t>(progressive.reports[0].coarse_filled));
        REQUIRE(coarse == scan.stored() - static_cast<std::int64_t>(share * 320));
        REQUIRE(progressive_error * 9 < scan_error);
    }
}

TEST_CASE("nearest fills from the step's own coarser samples where they came, and from the previous step elsewhere") {
    Receiving r;
    r.receiver.set_fill(FillRule::Nearest);
    const auto whole = packets_of(1, SendOrder::Progressive, WireFormat::Quad);
    for (const auto& p : whole) r.send(p);
    r.receiver.finish_current();
    // One row of the order's records (rank `rank`) of step `step`, alone in a packet.
    const SlabGeometry g = r.geometry;
    const auto row_packet = [&](int step, std::int64_t rank) {
        SlabWalker w(kDims, g.stored_z_begin, g.z_end, SendOrder::Progressive, WireFormat::Quad, {}, g.ghost_planes());
        const std::vector<float> volume = volume_of(step);
        std::vector<std::uint8_t> all(quad::kMaxPacketBytes);
        w.fill(all.data(), volume.data());  // the whole slab's 320 records
        std::vector<std::uint8_t> p(quad::packet_bytes(kDims.nx));
        quad::write_header(p.data(), step, static_cast<std::int32_t>(kDims.nx));
        std::memcpy(p.data() + quad::kHeaderBytes, all.data() + quad::kHeaderBytes + quad::kRecordBytes * rank * kDims.nx,
                    quad::kRecordBytes * kDims.nx);
        return p;
    };
    const ProgressiveRows rows(kDims.ny, kDepth, 1);
    const std::int64_t first_row = kDims.ny;  // the root, (y 0, first owned plane), after the ghost plane's rows
    // Step 2 loses every row but the root: all filled from it.
    r.send(row_packet(2, rows.rank_of(first_row)));
    r.receiver.finish_current();
    for (std::int64_t i = 0; i < r.stored(); ++i) {
        const std::int64_t x = i % kDims.nx;
        INFO("value " << i);
        if (i / kDims.nx == first_row) {
            REQUIRE(r.ages()[i] == 0);
        } else {
            REQUIRE(r.ages()[i] == kAgeCoarse);
            REQUIRE(r.values()[i] == r.truth(2, first_row * kDims.nx + x));
        }
    }
    // Step 3 loses the root itself and all but the owned row after it: what
    // lies under that row takes its value, the rest keeps step 2's, one step old.
    const std::int64_t second_row = rows.row_at(rows.rank_of(first_row) + 1);
    r.send(row_packet(3, rows.rank_of(second_row)));
    r.receiver.finish_current();
    std::int64_t under = 0, older = 0;
    for (std::int64_t i = 0; i < r.stored(); ++i) {
        const std::int64_t row = i / kDims.nx;
        INFO("value " << i);
        if (row == second_row) REQUIRE(r.ages()[i] == 0);
        else if (r.ages()[i] == kAgeCoarse) {
            ++under;
            // Rows below the second row's subtree take its value...
            std::int64_t up = row;
            while (up != -1 && up != second_row) up = rows.parent(up);
            REQUIRE(up == second_row);
            REQUIRE(r.values()[i] == r.truth(3, second_row * kDims.nx + i % kDims.nx));
        } else {
            // ...the others keep step 2's, one step old (a coarse value of step 2 is of step 2).
            REQUIRE(r.ages()[i] == 1);
            ++older;
        }
    }
    REQUIRE(under > 0);
    REQUIRE(older > 0);
}
