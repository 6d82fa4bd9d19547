#include "receive/slab_receiver.h"

#include "slabcast/clock.h"
#include "slabcast/publication.h"
#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"
#include "slabcast/step_stamp.h"

#include <unistd.h>
#include <immintrin.h>

#include <algorithm>

namespace slabcast {

SlabReceiver::SlabReceiver(int stream, SlabMapping& slab, StepFinished on_finished, std::int64_t stale_window_ns,
                           std::int64_t step_timeout_ns)
    : stream_(stream),
      slab_(slab),
      live_(slab.header_rw().live),
      dims_(slab.dims()),
      geometry_(slab.geometry()),
      owned_begin_(dims_.plane() * (geometry_.z_begin - geometry_.stored_z_begin)),
      ghost_values_(static_cast<std::uint64_t>(owned_begin_)),
      ghost_from_(std::make_unique<GhostHandoff>(static_cast<std::size_t>(dims_.plane()))),
      on_finished_(std::move(on_finished)),
      holes_(slab.value_count(), slab.buffers()),
      stale_window_ns_(stale_window_ns),
      step_timeout_ns_(step_timeout_ns) {
    current_.stream = stream;
    current_.expected = static_cast<std::uint64_t>(dims_.plane()) * geometry_.owned_planes();
    live_.step_expected.store(current_.expected);
    live_.writer_pid.store(::getpid());
    live_.writing_buffer.store(-1);
    if (ProgressiveRows::fits(dims_.ny, geometry_.owned_planes(), geometry_.ghost_planes()))
        progressive_.emplace(dims_.ny, geometry_.owned_planes(), geometry_.ghost_planes());
    // A re-attached slab keeps its values, its publications and step numbers;
    // what its age buffers hold is unknown, and the traffic counters are this
    // receiver's own and start from zero.
    std::uint64_t newest = 0;
    const SlabHeader& h = slab.header();
    for (int b = 0; b < slab.buffers(); ++b) {
        const std::uint64_t seq = h.publication[b].seq.load();
        if (seq != 0 && !(seq & 1) && h.publication[b].number.load() > newest) {
            newest = h.publication[b].number.load();
            previous_ = b;
        }
    }
    post_counters();
}

bool SlabReceiver::is_stale(std::int64_t batch, std::int64_t now_ns) const {
    for (const Replaced& r : replaced_)
        if (r.step == batch && now_ns - r.at_ns < stale_window_ns_) return true;
    return false;
}

bool SlabReceiver::comes_round_again(std::int64_t step) {
    const std::int64_t previous = replaced_[(replaced_next_ + replaced_.size() - 1) % replaced_.size()].step;
    if (step == previous) return false;  // late packets of the step just replaced are many at its end
    if (step != stale_run_step_) {
        stale_run_step_ = step;
        stale_run_ = 0;
    }
    return ++stale_run_ >= kLapPackets;
}

PacketVerdict SlabReceiver::handle(const std::uint8_t* packet, std::size_t length, std::int64_t now_ns,
                                   const std::uint8_t* landed) {
    if (!landed && stamp::is_stamp(packet, length)) return take_stamp(packet, length, now_ns);
    Arrival a;
    const bool ok = run::is_run_packet(packet, length) ? read_run(packet, length, landed, a)
                                                       : !landed && read_quad(packet, length, a);
    if (!ok) {
        ++total_rejected_;
        ++current_.rejected;
        return PacketVerdict::Rejected;
    }
    if (a.step != current_.step || !active_) {
        // A step the controller comes back to starts again with its first
        // packet (or, that lost, with a run of its packets); any other packet
        // of a step replaced moments ago is late.
        if (is_stale(a.step, now_ns) && !a.starts_slab && !comes_round_again(a.step)) {
            ++total_stale_;
            ++current_.stale;
            return PacketVerdict::Stale;
        }
        // A late packet of the step just published starts nothing either.
        if (a.step == current_.step && !a.starts_slab) {
            ++total_stale_;
            ++current_.stale;
            return PacketVerdict::Stale;
        }
        begin_step(a.step, now_ns);
    }
    last_packet_ns_ = now_ns;
    if (writing_ < 0) {  // every buffer was in use when the step began
        ++current_.packets;
        live_.dropped_packets.fetch_add(1, std::memory_order_relaxed);
        return PacketVerdict::Dropped;
    }
    // A payload that landed in a buffer since published (the step began
    // again within this batch) may have been filled over: it is late.
    if (a.landed && a.values != reinterpret_cast<const std::uint8_t*>(values_ + a.first)) {
        ++total_stale_;
        ++current_.stale;
        return PacketVerdict::Stale;
    }
    ++total_packets_;
    ++current_.packets;
    stale_run_ = 0;

    if (a.run) store_run(a);
    else if (a.rows) store_quad_rows(a.records, a.count);
    else store_scattered(a.records, a.count);
    if (ready_to_publish()) end_step(true);
    return PacketVerdict::Stored;
}

// A stamp of the step in progress times it, unless one already did (the
// sender sends two); a stamp of another step waits for that step to begin.
PacketVerdict SlabReceiver::take_stamp(const std::uint8_t* packet, std::size_t length, std::int64_t now_ns) {
    stamp::StepStamp st;
    if (stamp::parse(packet, length, st) != stamp::ParseResult::Ok || st.slab != geometry_.index) {
        ++total_rejected_;
        ++current_.rejected;
        return PacketVerdict::Rejected;
    }
    ++total_stamps_;
    if (active_ && st.step == current_.step) {
        if (current_.sent_ns == 0) current_.sent_ns = st.sent_ns;
    } else {
        pending_stamp_ = Stamp{st.step, st.sent_ns, now_ns};
    }
    return PacketVerdict::Stamp;
}

bool SlabReceiver::ready_to_publish() const {
    // Whole, ghost plane included when the previous slab hands it over.
    return active_ && current_.records == current_.expected &&
           (!expect_ghost_ || ghost_complete() || ghost_from_->has(current_.step));
}

void SlabReceiver::tick(std::int64_t now_ns) {
    if (!active_) return;
    if (ready_to_publish()) end_step(true);
    else if (now_ns - last_packet_ns_ > step_timeout_ns_) end_step(current_.records == current_.expected);
}

void SlabReceiver::count(std::uint64_t fresh, std::uint64_t fresh_ghost, std::uint64_t dups) {
    current_.records += fresh;
    current_.ghost_records += fresh_ghost;
    current_.duplicates += dups;
    total_duplicates_ += dups;
}

void SlabReceiver::store_scattered(const std::uint8_t* packet, int n) {
    const std::int64_t owned_from = geometry_.z_begin;
    std::uint64_t fresh = 0, fresh_ghost = 0, dups = 0;
    // Ranges kept apart from the members while values are stored: a float
    // store could alias them, and each would be written back every time.
    MinMax owned, ghost;
    for (int i = 0; i < n; ++i) {
        const quad::Record r = quad::read_record(packet, i);
        const std::int64_t at = slab_offset(dims_, geometry_, r.x, r.y, r.z);
        if (holes_.mark(at)) ++dups;
        else if (r.z >= owned_from) ++fresh;
        else ++fresh_ghost;
        values_[at] = r.v;
        (r.z >= owned_from ? owned : ghost).merge(MinMax{r.v, r.v});
    }
    owned_seen_.merge(owned);
    ghost_seen_.merge(ghost);
    count(fresh, fresh_ghost, dups);
    // Values anywhere: nothing may land for the rest of the step.
    furthest_ = static_cast<std::int64_t>(slab_.value_count());
    raw_in_order_ = false;
}

void SlabReceiver::store_quad_rows(const std::uint8_t* packet, int n) {
    // Pieces of rows (is_row_runs checked them): each a range of the slab.
    for (int k = 0; k < n;) {
        const quad::Record r = quad::read_record(packet, k);
        const int piece = static_cast<int>(std::min<std::int64_t>(n - k, dims_.nx - r.x));
        const std::int64_t first = slab_offset(dims_, geometry_, r.x, r.y, r.z);
        store_range(first, packet + quad::kHeaderBytes + quad::kRecordBytes * static_cast<std::size_t>(k) + 12,
                    quad::kRecordBytes, piece);
        furthest_ = std::max(furthest_, first + piece);
        k += piece;
    }
    raw_in_order_ = false;
}

void SlabReceiver::store_run(const Arrival& a) {
    if (a.progressive) {
        // A piece of a row at a time, each a range of the slab.
        const std::int64_t nx = dims_.nx, rows = progressive_->rows();
        for (std::int64_t k = 0, at = a.first; k < a.count;) {
            const std::int64_t x = at % nx, piece = std::min<std::int64_t>(a.count - k, nx - x);
            if (const std::int64_t ahead = at / nx + 2; ahead < rows) holes_.prefetch(progressive_->row_at(ahead) * nx);
            store_range(progressive_->row_at(at / nx) * nx + x, a.values + a.stride * static_cast<std::size_t>(k),
                        a.stride, piece);
            k += piece;
            at += piece;
        }
        // Values anywhere: nothing may land for the rest of the step.
        furthest_ = static_cast<std::int64_t>(slab_.value_count());
        raw_in_order_ = false;
        return;
    }
    raw_in_order_ = a.full_raw && a.first == furthest_;
    furthest_ = std::max(furthest_, a.first + a.count);
    store_range(a.first, a.values, a.stride, a.count);
}

void SlabReceiver::store_range(std::int64_t first, const std::uint8_t* values, std::size_t stride, std::int64_t n) {
    const std::int64_t end = first + n;
    // Ghost planes come first in the slab, then the owned ones.
    const std::int64_t split = std::clamp(owned_begin_, first, end);
    // Copied and measured in one pass with stores that bypass the cache:
    // the slab is read by the renderer after publication, not by this thread
    // now, and those stores save reading each destination line first (a
    // progressive order's rows of 1 KiB went in at 0.42x scan order's rate
    // through memcpy, 0.72-0.77x with them: bench_packet_paths;
    // CHANGELOG.md, issue 21). publish_step fences them. Values
    // that landed where they belong (the kernel's copy was the only one) are
    // measured where they lie, in cache.
    auto place = [&](std::int64_t from, std::int64_t to, MinMax& seen) {
        if (from == to) return;
        float* out = values_ + from;
        const std::uint8_t* in = values + stride * static_cast<std::size_t>(from - first);
        const auto count = static_cast<std::size_t>(to - from);
        seen.merge(in == reinterpret_cast<const std::uint8_t*>(out) ? min_max(out, count)
                                                                     : copy_min_max(out, in, stride, count));
    };
    place(first, split, ghost_seen_);
    place(split, end, owned_seen_);
    const std::uint64_t ghost_dups = holes_.mark_range(first, split);
    const std::uint64_t owned_dups = holes_.mark_range(split, end);
    count(static_cast<std::uint64_t>(end - split) - owned_dups, static_cast<std::uint64_t>(split - first) - ghost_dups,
          ghost_dups + owned_dups);
}

void SlabReceiver::begin_step(std::int64_t step, std::int64_t now_ns) {
    if (active_) end_step(false);
    if (current_.step >= 0 && current_.step != step) {
        replaced_[replaced_next_] = Replaced{current_.step, now_ns};
        replaced_next_ = (replaced_next_ + 1) % replaced_.size();
    }
    const std::uint64_t expected = current_.expected;
    current_ = StepReport{};
    current_.stream = stream_;
    current_.step = step;
    current_.expected = expected;
    current_.begun_ns = realtime_ns();
    if (pending_stamp_.step == step && now_ns - pending_stamp_.at_ns <= step_timeout_ns_)
        current_.sent_ns = pending_stamp_.sent_ns;
    pending_stamp_ = Stamp{};
    holes_.reset();
    owned_seen_ = MinMax{};
    ghost_seen_ = MinMax{};
    furthest_ = 0;
    raw_in_order_ = false;
    // A buffer no reader pins, never the one on screen; none: the step is
    // dropped, counted, and the sockets keep draining.
    writing_ = take_buffer(slab_, &current_.dropped_because, &current_.pinned);
    current_.dropped = writing_ < 0;
    const auto pinned = static_cast<std::uint32_t>(current_.pinned);
    live_.pinned.store(pinned);
    if (pinned > live_.pinned_peak.load()) live_.pinned_peak.store(pinned);
    values_ = writing_ >= 0 ? slab_.values_rw(writing_) : nullptr;
    if (current_.dropped) live_.dropped_steps.fetch_add(1);
    active_ = true;
    last_packet_ns_ = now_ns;
    live_.step.store(step);
    live_.generation.fetch_add(1);
    post_counters();
}

void SlabReceiver::end_step(bool complete) {
    active_ = false;
    current_.complete = complete && !current_.dropped;
    if (!current_.dropped) publish_step();
    if (!current_.dropped) {
        // The last finished step is the last published one: a dropped step
        // is counted in dropped_steps, not reported as a step that lost all.
        finished_expected_ += current_.expected;
        finished_records_ += current_.records;
        live_.last_step_records.store(current_.records);
        live_.last_step_loss_ppm.store(static_cast<std::uint32_t>(current_.loss_percent() * 1e4));
        live_.last_step_complete.store(current_.complete ? 1 : 0);
        live_.last_step.store(current_.step);
    }
    live_.generation.fetch_add(1);
    post_counters();
    if (on_finished_) on_finished_(current_);
}

// Fills the holes, publishes the buffer, and hands the top plane on.
void SlabReceiver::publish_step() {
    const int w = writing_;
    float* values = slab_.values_rw(w);
    std::uint8_t* ages = slab_.ages_rw(w);
    const bool first = previous_ < 0;
    current_.holes = holes_.fill(w, values, ages, first ? nullptr : slab_.values(previous_),
                                 first ? nullptr : slab_.ages(previous_), owned_begin_);
    const bool lost_any = current_.records + current_.ghost_records < slab_.value_count();
    if (fill_ == FillRule::Nearest && lost_any && progressive_)
        current_.coarse_filled = fill_from_coarser(*progressive_, dims_.nx, values, ages);
    if (expect_ghost_ && !ghost_complete()) {
        // The ghost plane this stream did not carry: the previous slab's
        // publication of the same step, with its ages, over the older values
        // just filled in (its chunks are marked aged by fill()).
        const std::int64_t ghost_plane = owned_begin_ - dims_.plane();
        ghost_from_->take(current_.step, values + ghost_plane, ages + ghost_plane, [&](std::size_t i) {
            return !holes_.arrived(ghost_plane + static_cast<std::int64_t>(i));
        });
    }
    _mm_sfence();  // the stores that bypassed the cache (copy_min_max) before the step is seen
    publish_buffer(slab_, w, PublishInfo{current_.step, current_.records, current_.expected, current_.holes,
                                         current_.records == current_.expected, owned_range(),
                                         ghost_range(values, ages), current_.sent_ns, current_.begun_ns,
                                         current_.repaired});
    current_.published_ns = slab_.header().publication[w].published_ns.load(std::memory_order_relaxed);
    current_.buffer = w;
    previous_ = w;
    writing_ = -1;
    values_ = nullptr;
    if (hand_to_) {
        const std::int64_t top = dims_.plane() * (geometry_.z_end - 1 - geometry_.stored_z_begin);
        hand_to_->give(current_.step, values + top, ages + top);
    }
}

namespace {
PartRange part_range(const MinMax& values, const AgeRange& ages) {
    return PartRange{values.lo, values.hi, ages.lo, ages.hi, static_cast<std::uint8_t>(values.infinite() ? 0 : 1), 0};
}
}  // namespace

// The owned planes' range as placed, when every owned value arrived once:
// then nothing was filled, and every age is 0. A lost value was filled from
// another step, and a value placed twice may have changed: the reader
// measures those itself.
PartRange SlabReceiver::owned_range() const {
    if (current_.records != current_.expected || current_.duplicates != 0) return PartRange{};
    return part_range(owned_seen_, AgeRange{0, 0});
}

// The ghost planes' range: as placed when they all arrived once, else
// measured now, filled and handed over (a plane or so: cheap).
PartRange SlabReceiver::ghost_range(const float* values, const std::uint8_t* ages) const {
    const auto n = static_cast<std::size_t>(ghost_values_);
    if (current_.ghost_records == ghost_values_ && current_.duplicates == 0)
        return part_range(ghost_seen_, n ? AgeRange{0, 0} : AgeRange{});
    return part_range(min_max(values, n), age_range(ages, n));
}

void SlabReceiver::finish_current() {
    if (active_) end_step(current_.records == current_.expected);
}

void SlabReceiver::post_counters() {
    live_.step_records.store(current_.records, std::memory_order_relaxed);
    live_.packets.store(total_packets_, std::memory_order_relaxed);
    live_.rejected.store(total_rejected_, std::memory_order_relaxed);
    live_.stale.store(total_stale_, std::memory_order_relaxed);
    live_.stamps.store(total_stamps_, std::memory_order_relaxed);
    live_.duplicates.store(total_duplicates_, std::memory_order_relaxed);
    live_.heartbeat_ns.store(realtime_ns(), std::memory_order_relaxed);
    live_.writes.fetch_add(1, std::memory_order_release);
}

}  // namespace slabcast
