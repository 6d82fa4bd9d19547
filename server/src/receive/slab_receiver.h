// The receiver's core for one stream: validates each quad or run packet
// (docs/wire-format.md; both on the same port, always, and run packets in any
// codec, each decoding on its own), tracks which
// step is being written, places values at their offsets in the slab, and keeps
// the per-step accounting (distinct records, duplicates, loss). Nothing outside
// the slab is ever written: a packet with any coordinate outside the stream's
// stored planes is rejected whole before a single value is stored.
//
// Each step goes into a buffer of its own that no reader pins, and is published
// whole when it ends: all of its records placed, the next step begun, or the
// step timeout passed with nothing of it (docs/shared-memory.md, "Buffers and
// publication"). What it lost is filled from the step before and aged, or
// (`--fill nearest`) from a coarser sample of the same step where one arrived
// (slabcast/progressive_rows.h). When
// readers pin every buffer the step is dropped and counted; the receiver never
// waits for a reader.
#pragma once

#include "receive/ghost_handoff.h"
#include "receive/landing_site.h"
#include "receive/step_holes.h"

#include "slabcast/progressive_rows.h"
#include "slabcast/run_codec.h"
#include "slabcast/send_order.h"
#include "slabcast/slab_file.h"
#include "slabcast/value_range.h"
#include "slabcast/volume.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace slabcast {

struct StepReport {
    int stream = 0;
    std::int64_t step = -1;
    std::uint64_t records = 0;   // distinct owned values received
    std::uint64_t expected = 0;  // owned values of a complete step
    std::uint64_t ghost_records = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t packets = 0;
    std::uint64_t rejected = 0;  // during this step, any step
    std::uint64_t stale = 0;     // during this step
    std::uint64_t holes = 0;     // owned values that did not arrive, filled at publication
    std::uint64_t coarse_filled = 0;  // of the stored values, those filled from a coarser sample (--fill nearest)
    std::uint64_t repaired = 0;  // datagrams rebuilt from FEC parity while the step was written
    int buffer = -1;             // the buffer it was published in
    bool complete = false;
    int pinned = 0;              // buffers readers held when it began
    bool dropped = false;        // not written: every buffer was in use
    std::string dropped_because;
    // The step's timeline (CLOCK_REALTIME): sent by its sender (the step
    // stamp, the sender's clock; 0 none came), its first packet taken here,
    // published (0 not published).
    std::int64_t sent_ns = 0;
    std::int64_t begun_ns = 0;
    std::int64_t published_ns = 0;
    double loss_percent() const {
        return expected ? 100.0 * static_cast<double>(expected - records) / static_cast<double>(expected) : 0.0;
    }
};

enum class PacketVerdict { Stored, Rejected, Stale, Dropped, Stamp };

class SlabReceiver final : public LandingSite {
public:
    using StepFinished = std::function<void(const StepReport&)>;

    // A packet of a step that another step replaced less than `stale_window_ns`
    // ago is stale: it was late. A step number seen before means the sender
    // came back to it (a controller looping over the steps) when it comes past
    // the window, or within it with the packet that starts the slab, or, for a
    // step replaced two or more steps ago, with kLapPackets of its packets in a
    // row (a short loop whose first packet was lost). A step with no packet
    // for `step_timeout_ns` is published as it is.
    static constexpr int kLapPackets = 8;
    SlabReceiver(int stream, SlabMapping& slab, StepFinished on_finished,
                 std::int64_t stale_window_ns = 250'000'000, std::int64_t step_timeout_ns = 500'000'000);

    // `now_ns`: monotonic time of arrival (one clock read per receive batch).
    // `landed`: the payload, when the kernel put it apart from the header
    // (BatchReceiver, LandingSite).
    PacketVerdict handle(const std::uint8_t* packet, std::size_t length, std::int64_t now_ns,
                         const std::uint8_t* landed = nullptr);
    Room landing_room() const override;
    bool landed_in_place(const std::uint8_t* header, std::size_t length, const std::uint8_t* payload) const override;
    void set_fill(FillRule fill) { fill_ = fill; }
    // Called after a batch of packets: posts its counters to the slab header
    // (a step is published by publish_step when it ends).
    void post_counters();
    // Called at least every 100 ms: ends a step whose timeout passed, or whose
    // ghost plane from the neighbour has come.
    void tick(std::int64_t now_ns);
    // Ends the step in progress, if any (shutdown).
    void finish_current();
    // `n` datagrams were just rebuilt from FEC parity and handled.
    void count_repaired(std::uint64_t n) {
        if (active_) current_.repaired += n;
    }

    // Seamless slabs from a sender that sends owned planes only: when this
    // slab publishes a step, its top owned plane goes to `next` (the next
    // slab's receiver, on this host) for its ghost plane.
    void hand_top_plane_to(GhostHandoff* next) { hand_to_ = next; }
    // This slab's ghost plane may come from the previous slab's receiver.
    GhostHandoff& ghost_handoff() { return *ghost_from_; }
    void expect_ghost_handoff() { expect_ghost_ = true; }

    const StepReport& current() const { return current_; }
    std::uint64_t total_packets() const { return total_packets_; }
    std::uint64_t total_rejected() const { return total_rejected_; }
    std::uint64_t total_stale() const { return total_stale_; }
    std::uint64_t total_stamps() const { return total_stamps_; }
    std::uint64_t finished_expected() const { return finished_expected_; }
    std::uint64_t finished_records() const { return finished_records_; }
    const StepHoles& holes() const { return holes_; }

private:
    // What a datagram brings, in either wire format, once checked: its step,
    // whether it starts the slab, and its values: a contiguous run at slab
    // offset `first` (`stride` bytes from one value to the next), or quad
    // records scattered over the slab.
    struct Arrival {
        std::int64_t step = -1;
        bool starts_slab = false;
        bool run = false;
        std::int64_t first = 0;
        const std::uint8_t* values = nullptr;
        std::size_t stride = 0;
        int count = 0;
        const std::uint8_t* records = nullptr;  // quad records, when not a run
        bool rows = false;                      // quad records in pieces of rows (scan or progressive order)
        bool progressive = false;      // a run of the progressive order: `first` is rank * nx + x there
        bool full_raw = false;  // a run packet of codec none with the most values
        bool landed = false;    // its payload landed in the slab (LandingSite)
    };
    bool read_quad(const std::uint8_t* packet, std::size_t length, Arrival& a) const;
    PacketVerdict take_stamp(const std::uint8_t* packet, std::size_t length, std::int64_t now_ns);
    bool read_run(const std::uint8_t* packet, std::size_t length, const std::uint8_t* landed, Arrival& a);
    bool run_offset(const run::Header& h, std::int64_t& first) const;
    bool inside(const std::uint8_t* packet, int n) const;
    bool is_row_runs(const std::uint8_t* packet, int n) const;
    void store_run(const Arrival& a);
    void store_range(std::int64_t first, const std::uint8_t* values, std::size_t stride, std::int64_t n);
    void store_scattered(const std::uint8_t* packet, int n);
    void store_quad_rows(const std::uint8_t* packet, int n);
    void count(std::uint64_t fresh, std::uint64_t fresh_ghost, std::uint64_t dups);
    bool is_stale(std::int64_t batch, std::int64_t now_ns) const;
    // Counts a packet of `step`, replaced within the stale window; true when
    // the sender is plainly back at it.
    bool comes_round_again(std::int64_t step);
    bool starts_slab(std::int64_t x, std::int64_t y, std::int64_t z) const;
    bool ghost_complete() const { return current_.ghost_records == ghost_values_; }
    bool ready_to_publish() const;
    void begin_step(std::int64_t step, std::int64_t now_ns);
    void end_step(bool complete);
    void publish_step();
    PartRange owned_range() const;
    PartRange ghost_range(const float* values, const std::uint8_t* ages) const;

    int stream_;
    SlabMapping& slab_;
    SlabLive& live_;
    Dims dims_;
    SlabGeometry geometry_;
    std::int64_t owned_begin_;     // offset of the first owned value (after the ghost planes)
    std::uint64_t ghost_values_;   // stored values below the owned planes
    float* values_ = nullptr;      // the writing buffer's values
    int writing_ = -1;             // the buffer the step goes into, -1 none (or dropping)
    int previous_ = -1;            // the slab's newest publication, -1 none
    GhostHandoff* hand_to_ = nullptr;
    std::unique_ptr<GhostHandoff> ghost_from_;
    bool expect_ghost_ = false;
    StepFinished on_finished_;
    run::RunDecoder decoder_;  // run packets' payloads (lz4, zfp)
    std::optional<ProgressiveRows> progressive_;  // the slab's rows coarse first; none past 2^32 rows
    FillRule fill_ = FillRule::Previous;

    StepHoles holes_;
    // The range of the values placed in the step so far, owned planes and
    // ghost planes apart: published with the step (BufferRanges).
    MinMax owned_seen_, ghost_seen_;
    StepReport current_;
    bool active_ = false;  // a step is in progress and not yet reported
    std::int64_t furthest_ = 0;  // nothing at or past this stored value has arrived in the step
    bool raw_in_order_ = false;  // the last run was full, raw, and began at furthest_
    std::int64_t last_packet_ns_ = 0;
    std::int64_t stale_window_ns_;
    std::int64_t step_timeout_ns_;
    struct Replaced {
        std::int64_t step = -1;
        std::int64_t at_ns = 0;
    };
    std::array<Replaced, 8> replaced_{};  // the last steps replaced by a newer one
    std::size_t replaced_next_ = 0;
    // Packets in a row of a step replaced two or more steps ago (none of the
    // current step between): late packets come one by one, a step behind.
    std::int64_t stale_run_step_ = -1;
    int stale_run_ = 0;
    // A step stamp that came before its step's first packet (as its sender
    // sends it), kept for that step if it begins within the step timeout.
    struct Stamp {
        std::int64_t step = -1;
        std::int64_t sent_ns = 0;
        std::int64_t at_ns = 0;  // arrival, monotonic
    };
    Stamp pending_stamp_;
    std::uint64_t total_packets_ = 0, total_rejected_ = 0, total_stale_ = 0, total_duplicates_ = 0;
    std::uint64_t total_stamps_ = 0;
    std::uint64_t finished_expected_ = 0, finished_records_ = 0;
};

}  // namespace slabcast
