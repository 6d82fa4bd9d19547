// The receiver's reading of a datagram (SlabReceiver, slab_receiver.h): a
// quad or run packet checked whole against the stream's slab before any value
// is stored, and where it goes: a run of the slab's linear index, a run of the
// progressive order, or quad records value by value; and which full raw runs
// may land straight in the slab (LandingSite).
#include "receive/slab_receiver.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"

#include <algorithm>
#include <cstring>

namespace slabcast {

bool SlabReceiver::inside(const std::uint8_t* packet, int n) const {
    // Unsigned compares fold the "< 0" tests in; 64-bit arithmetic so that
    // hostile coordinates cannot overflow.
    const auto nx = static_cast<std::uint64_t>(dims_.nx), ny = static_cast<std::uint64_t>(dims_.ny);
    const std::int64_t z0 = geometry_.stored_z_begin;
    const auto depth = static_cast<std::uint64_t>(geometry_.stored_planes());
    bool ok = true;
    for (int i = 0; i < n; ++i) {
        const quad::Record r = quad::read_record(packet, i);
        ok &= static_cast<std::uint64_t>(std::int64_t{r.x}) < nx;
        ok &= static_cast<std::uint64_t>(std::int64_t{r.y}) < ny;
        ok &= static_cast<std::uint64_t>(std::int64_t{r.z} - z0) < depth;
    }
    return ok;
}

bool SlabReceiver::is_row_runs(const std::uint8_t* packet, int n) const {
    // Compares the packet with the records a row order (scan or progressive)
    // would put there, a row at a time: within a row only x moves, so each
    // record is one 16-byte compare against a vector that steps x by one
    // (the value lane is masked off); the next row begins at x = 0 of the row
    // its first record names, checked to be one of the slab's. A match also
    // proves every record inside the slab, since the expected coordinates are.
    using Lane = std::int32_t __attribute__((vector_size(16)));
    const quad::Record first = quad::read_record(packet, 0);
    std::int64_t x = first.x, y = first.y, z = first.z;
    if (x < 0 || x >= dims_.nx || y < 0 || y >= dims_.ny || z < geometry_.stored_z_begin || z >= geometry_.z_end)
        return false;
    const Lane coordinates_only = {-1, -1, -1, 0};
    const Lane step_x = {1, 0, 0, 0};
    Lane differ = {0, 0, 0, 0};
    const std::uint8_t* record = packet + quad::kHeaderBytes;
    for (int k = 0; k < n;) {
        if (k > 0) {  // the next row's first record: x = 0 is what the compare expects
            const quad::Record next = quad::read_record(packet, k);
            x = 0;
            y = next.y;
            z = next.z;
            if (y < 0 || y >= dims_.ny || z < geometry_.stored_z_begin || z >= geometry_.z_end) return false;
        }
        const int row = static_cast<int>(std::min<std::int64_t>(n - k, dims_.nx - x));
        Lane expected = {static_cast<std::int32_t>(x), static_cast<std::int32_t>(y), static_cast<std::int32_t>(z), 0};
        for (int j = 0; j < row; ++j, record += quad::kRecordBytes) {
            Lane got;
            std::memcpy(&got, record, sizeof got);
            differ |= got ^ expected;
            expected += step_x;
        }
        differ &= coordinates_only;
        if ((differ[0] | differ[1] | differ[2]) != 0) return false;  // other orders give up here, one row in
        k += row;
    }
    return true;
}

bool SlabReceiver::starts_slab(std::int64_t x, std::int64_t y, std::int64_t z) const {
    // Every send order begins at (0, 0) of the first plane sent: the ghost
    // plane, or the first owned plane for a sender that sends no ghost plane.
    return x == 0 && y == 0 && (z == geometry_.stored_z_begin || z == geometry_.z_begin);
}

bool SlabReceiver::read_quad(const std::uint8_t* packet, std::size_t length, Arrival& a) const {
    quad::Header h;
    // Steps are numbered from 0; a negative batch is as malformed as a bad length.
    if (quad::parse_header(packet, length, h) != quad::ParseResult::Ok || h.batch < 0) return false;
    const quad::Record first = quad::read_record(packet, 0);
    a.step = h.batch;
    a.starts_slab = starts_slab(first.x, first.y, first.z);
    a.count = h.n;
    // Scan and progressive order send rows of consecutive values: checked
    // and stored a row's piece at a time. Anything else (Morton order) is
    // checked and stored value by value.
    a.records = packet;
    a.rows = is_row_runs(packet, h.n);
    return a.rows || inside(packet, h.n);
}

// Where run `h` goes in the slab (its first stored value), when it lies
// wholly inside the stream's stored planes.
// A progressive run: `first` is its place in the progressive order (rank of
// its first row * nx + x), and the run ends within the order's last row.
bool SlabReceiver::run_offset(const run::Header& h, std::int64_t& first) const {
    if (h.slab != geometry_.index) return false;  // another stream's slab
    // Its first voxel inside the stored planes, and the whole run inside the
    // slab's stored values (64-bit sums: a count cannot wrap past the end).
    if (h.x < 0 || h.x >= dims_.nx || h.y < 0 || h.y >= dims_.ny || h.z < geometry_.stored_z_begin ||
        h.z >= geometry_.z_end)
        return false;
    first = slab_offset(dims_, geometry_, h.x, h.y, h.z);
    if (h.progressive) {
        if (!progressive_) return false;
        first = progressive_->rank_of(first / dims_.nx) * dims_.nx + h.x;
    }
    return first + std::int64_t{h.count} <= static_cast<std::int64_t>(slab_.value_count());
}

bool SlabReceiver::read_run(const std::uint8_t* packet, std::size_t length, const std::uint8_t* landed, Arrival& a) {
    run::Header h;
    if (run::parse_header(packet, length, h) != run::ParseResult::Ok) return false;
    std::int64_t first = 0;
    if (!run_offset(h, first)) return false;
    // Decoded apart from the slab: a payload that does not decode writes nothing.
    const float* values = decoder_.decode(h, landed ? landed : run::payload(packet));
    if (!values) return false;
    a.step = h.step;
    a.starts_slab = starts_slab(h.x, h.y, h.z);
    a.run = true;
    a.first = first;
    a.values = reinterpret_cast<const std::uint8_t*>(values);
    a.stride = sizeof(float);
    a.count = h.count;
    a.progressive = h.progressive;
    a.full_raw = h.codec == run::Codec::None && h.count == run::kMaxValues && !h.progressive;
    a.landed = landed != nullptr;
    return true;
}

LandingSite::Room SlabReceiver::landing_room() const {
    // Only while the step's runs come in order, full and raw: then the next
    // ones most likely follow the furthest value stored, and nothing at or
    // past it has arrived in this step (docs/wire-format.md, "Send order").
    if (!active_ || !values_ || !raw_in_order_) return {};
    const std::int64_t left = static_cast<std::int64_t>(slab_.value_count()) - furthest_;
    return {reinterpret_cast<std::uint8_t*>(values_ + furthest_), static_cast<std::size_t>(left) * sizeof(float)};
}

bool SlabReceiver::landed_in_place(const std::uint8_t* header, std::size_t length, const std::uint8_t* payload) const {
    run::Header h;
    std::int64_t first = 0;
    return active_ && values_ && run::is_run_packet(header, length) &&
           run::parse_header(header, length, h) == run::ParseResult::Ok && h.codec == run::Codec::None && !h.progressive &&
           h.step == current_.step && run_offset(h, first) &&
           payload == reinterpret_cast<const std::uint8_t*>(values_ + first);
}

}  // namespace slabcast
