// The receiver's core for one stream: validates each quad packet, tracks which
// step is being written, places values at their offsets in the slab, and keeps
// the per-step accounting (distinct records, duplicates, loss). Nothing outside
// the slab is ever written: a packet with any coordinate outside the stream's
// stored planes is rejected whole before a single value is stored.
#pragma once

#include "slabcast/slab_file.h"
#include "slabcast/volume.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

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
    bool complete = false;
    double loss_percent() const {
        return expected ? 100.0 * static_cast<double>(expected - records) / static_cast<double>(expected) : 0.0;
    }
};

enum class PacketVerdict { Stored, Rejected, Stale };

class SlabReceiver {
public:
    using StepFinished = std::function<void(const StepReport&)>;

    // A packet of a step that another step replaced less than `stale_window_ns`
    // ago is stale: it was late. A step number seen before means the sender
    // came back to it (a controller looping over the steps) when it comes past
    // the window, or within it with the packet that starts the slab.
    SlabReceiver(int stream, SlabMapping& slab, StepFinished on_finished,
                 std::int64_t stale_window_ns = 250'000'000);

    // `now_ns`: monotonic time of arrival (one clock read per receive batch).
    PacketVerdict handle(const std::uint8_t* packet, std::size_t length, std::int64_t now_ns);
    // Called after a batch of packets: publishes counters to the slab header.
    void publish();
    // Reports the step in progress, if any (shutdown).
    void finish_current();

    // Also write the top owned plane into a neighbour slab's ghost plane (the
    // neighbour is on this host): seamless slabs even from a sender that sends
    // owned planes only. `ghost_plane` points at that plane's first value.
    void mirror_top_plane_to(float* ghost_plane) { mirror_ = ghost_plane; }

    const StepReport& current() const { return current_; }
    std::uint64_t total_packets() const { return total_packets_; }
    std::uint64_t total_rejected() const { return total_rejected_; }
    std::uint64_t total_stale() const { return total_stale_; }
    std::uint64_t finished_expected() const { return finished_expected_; }
    std::uint64_t finished_records() const { return finished_records_; }

private:
    bool inside(const std::uint8_t* packet, int n) const;
    bool is_scan_run(const std::uint8_t* packet, int n) const;
    void store_run(const std::uint8_t* packet, int n, std::int64_t first);
    void store_scattered(const std::uint8_t* packet, int n);
    std::uint64_t mark_seen(std::int64_t begin, std::int64_t end);
    void count(std::uint64_t fresh, std::uint64_t fresh_ghost, std::uint64_t dups);
    bool is_stale(std::int64_t batch, std::int64_t now_ns) const;
    bool starts_slab(const std::uint8_t* packet) const;
    void begin_step(std::int64_t step, std::int64_t now_ns);
    void end_step(bool complete);

    int stream_;
    SlabLive& live_;
    Dims dims_;
    SlabGeometry geometry_;
    float* values_;
    float* mirror_ = nullptr;
    StepFinished on_finished_;

    std::vector<std::uint64_t> seen_;  // one bit per stored value, for this step
    StepReport current_;
    bool active_ = false;  // a step is in progress and not yet reported
    std::int64_t stale_window_ns_;
    struct Replaced {
        std::int64_t step = -1;
        std::int64_t at_ns = 0;
    };
    std::array<Replaced, 8> replaced_{};  // the last steps replaced by a newer one
    std::size_t replaced_next_ = 0;
    std::uint64_t total_packets_ = 0, total_rejected_ = 0, total_stale_ = 0, total_duplicates_ = 0;
    std::uint64_t finished_expected_ = 0, finished_records_ = 0;
};

}  // namespace slabcast
