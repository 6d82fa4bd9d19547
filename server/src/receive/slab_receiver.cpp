#include "receive/slab_receiver.h"

#include "slabcast/quad_packet.h"
#include "slabcast/clock.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace slabcast {

SlabReceiver::SlabReceiver(int stream, SlabMapping& slab, StepFinished on_finished, std::int64_t stale_window_ns)
    : stream_(stream),
      live_(slab.header_rw().live),
      dims_(slab.dims()),
      geometry_(slab.geometry()),
      values_(slab.values_rw()),
      on_finished_(std::move(on_finished)),
      seen_((slab.value_count() + 63) / 64, 0),
      stale_window_ns_(stale_window_ns) {
    current_.stream = stream;
    current_.expected = static_cast<std::uint64_t>(dims_.plane()) * geometry_.owned_planes();
    live_.step_expected.store(current_.expected);
    live_.writer_pid.store(::getpid());
    // A re-attached slab keeps its values and step numbers; the traffic
    // counters are this receiver's own and start from zero.
    publish();
}

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

bool SlabReceiver::is_scan_run(const std::uint8_t* packet, int n) const {
    // Compares the packet with the records scan order would put there after
    // its first one, a row at a time: within a row only x moves, so each
    // record is one 16-byte compare against a vector that steps x by one
    // (the value lane is masked off). A match also proves every record
    // inside the slab, since the expected coordinates are.
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
        if (z >= geometry_.z_end) return false;
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
        x = 0;
        if (++y == dims_.ny) {
            y = 0;
            ++z;
        }
    }
    return true;
}

bool SlabReceiver::starts_slab(const std::uint8_t* packet) const {
    // Both send orders begin at (0, 0) of the first plane sent: the ghost plane,
    // or the first owned plane for a sender that sends no ghost plane.
    const quad::Record r = quad::read_record(packet, 0);
    return r.x == 0 && r.y == 0 && (r.z == geometry_.stored_z_begin || r.z == geometry_.z_begin);
}

bool SlabReceiver::is_stale(std::int64_t batch, std::int64_t now_ns) const {
    for (const Replaced& r : replaced_)
        if (r.step == batch && now_ns - r.at_ns < stale_window_ns_) return true;
    return false;
}

PacketVerdict SlabReceiver::handle(const std::uint8_t* packet, std::size_t length, std::int64_t now_ns) {
    quad::Header h;
    // Steps are numbered from 0; a negative batch is as malformed as a bad length.
    if (quad::parse_header(packet, length, h) != quad::ParseResult::Ok || h.batch < 0) {
        ++total_rejected_;
        ++current_.rejected;
        return PacketVerdict::Rejected;
    }
    // Scan order, the default, sends runs of consecutive values: checked and
    // stored as a block. Anything else is checked and stored value by value.
    const bool run = is_scan_run(packet, h.n);
    if (!run && !inside(packet, h.n)) {
        ++total_rejected_;
        ++current_.rejected;
        return PacketVerdict::Rejected;
    }
    if (h.batch != current_.step) {
        // A step the controller comes back to starts again with its first
        // packet; any other packet of a step replaced moments ago is late.
        if (is_stale(h.batch, now_ns) && !starts_slab(packet)) {
            ++total_stale_;
            ++current_.stale;
            return PacketVerdict::Stale;
        }
        begin_step(h.batch, now_ns);
    }
    ++total_packets_;
    ++current_.packets;

    if (run) {
        const quad::Record first = quad::read_record(packet, 0);
        store_run(packet, h.n, slab_offset(dims_, geometry_, first.x, first.y, first.z));
    }
    else store_scattered(packet, h.n);
    if (active_ && current_.records == current_.expected) end_step(true);
    return PacketVerdict::Stored;
}

void SlabReceiver::count(std::uint64_t fresh, std::uint64_t fresh_ghost, std::uint64_t dups) {
    current_.records += fresh;
    current_.ghost_records += fresh_ghost;
    current_.duplicates += dups;
    total_duplicates_ += dups;
}

void SlabReceiver::store_scattered(const std::uint8_t* packet, int n) {
    const std::int64_t owned_from = geometry_.z_begin;
    const std::int64_t top_plane = geometry_.z_end - 1;
    std::uint64_t fresh = 0, fresh_ghost = 0, dups = 0;
    for (int i = 0; i < n; ++i) {
        const quad::Record r = quad::read_record(packet, i);
        const std::int64_t at = slab_offset(dims_, geometry_, r.x, r.y, r.z);
        std::uint64_t& word = seen_[static_cast<std::size_t>(at) >> 6];
        const std::uint64_t bit = std::uint64_t{1} << (at & 63);
        const bool owned = r.z >= owned_from;
        if (word & bit) ++dups;
        else if (owned) ++fresh;
        else ++fresh_ghost;
        word |= bit;
        values_[at] = r.v;
        if (mirror_ && r.z == top_plane) mirror_[r.y * dims_.nx + r.x] = r.v;
    }
    count(fresh, fresh_ghost, dups);
}

// Marks offsets [begin, end) as seen; returns how many already were.
std::uint64_t SlabReceiver::mark_seen(std::int64_t begin, std::int64_t end) {
    std::uint64_t already = 0;
    while (begin < end) {
        const std::int64_t word_end = std::min(end, (begin | 63) + 1);
        const int width = static_cast<int>(word_end - begin);
        const std::uint64_t mask = (width == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << width) - 1)) << (begin & 63);
        std::uint64_t& word = seen_[static_cast<std::size_t>(begin) >> 6];
        already += static_cast<std::uint64_t>(__builtin_popcountll(word & mask));
        word |= mask;
        begin = word_end;
    }
    return already;
}

void SlabReceiver::store_run(const std::uint8_t* packet, int n, std::int64_t first) {
    const std::uint8_t* v = packet + quad::kHeaderBytes + 12;  // the value of record 0
    float* out = values_ + first;
    for (int i = 0; i < n; ++i) std::memcpy(out + i, v + quad::kRecordBytes * static_cast<std::size_t>(i), 4);
    const std::int64_t end = first + n;
    // Ghost planes come first in the slab, then the owned ones.
    const std::int64_t owned_begin = dims_.plane() * (geometry_.z_begin - geometry_.stored_z_begin);
    const std::int64_t split = std::clamp(owned_begin, first, end);
    const std::uint64_t ghost_dups = mark_seen(first, split);
    const std::uint64_t owned_dups = mark_seen(split, end);
    count(static_cast<std::uint64_t>(end - split) - owned_dups, static_cast<std::uint64_t>(split - first) - ghost_dups,
          ghost_dups + owned_dups);
    if (mirror_) {
        const std::int64_t top_begin = dims_.plane() * (geometry_.z_end - 1 - geometry_.stored_z_begin);
        const std::int64_t from = std::max(first, top_begin);
        if (from < end)
            std::memcpy(mirror_ + (from - top_begin), values_ + from, static_cast<std::size_t>(end - from) * sizeof(float));
    }
}

void SlabReceiver::begin_step(std::int64_t step, std::int64_t now_ns) {
    if (active_) end_step(false);
    if (current_.step >= 0) {
        replaced_[replaced_next_] = Replaced{current_.step, now_ns};
        replaced_next_ = (replaced_next_ + 1) % replaced_.size();
    }
    const std::uint64_t expected = current_.expected;
    current_ = StepReport{};
    current_.stream = stream_;
    current_.step = step;
    current_.expected = expected;
    std::fill(seen_.begin(), seen_.end(), 0);
    active_ = true;
    live_.step.store(step);
    live_.generation.fetch_add(1);
    publish();
}

void SlabReceiver::end_step(bool complete) {
    active_ = false;
    current_.complete = complete;
    finished_expected_ += current_.expected;
    finished_records_ += current_.records;
    live_.last_step_records.store(current_.records);
    live_.last_step_loss_ppm.store(static_cast<std::uint32_t>(current_.loss_percent() * 1e4));
    live_.last_step_complete.store(complete ? 1 : 0);
    live_.last_step.store(current_.step);
    live_.generation.fetch_add(1);
    publish();
    if (on_finished_) on_finished_(current_);
}

void SlabReceiver::finish_current() {
    if (active_) end_step(current_.records == current_.expected);
}

void SlabReceiver::publish() {
    live_.step_records.store(current_.records, std::memory_order_relaxed);
    live_.packets.store(total_packets_, std::memory_order_relaxed);
    live_.rejected.store(total_rejected_, std::memory_order_relaxed);
    live_.stale.store(total_stale_, std::memory_order_relaxed);
    live_.duplicates.store(total_duplicates_, std::memory_order_relaxed);
    live_.heartbeat_ns.store(realtime_ns(), std::memory_order_relaxed);
    live_.writes.fetch_add(1, std::memory_order_release);
}

}  // namespace slabcast
