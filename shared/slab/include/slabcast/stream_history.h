// The last minute of a stream's figures, one sample per status second of its
// receiver, for the stream monitor's chart and its CSV export (the paper's
// throughput-over-time figures, Balman et al., 2012, section 4). No VTK, no Qt.
#pragma once

#include "slabcast/slab_figures.h"

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace slabcast {

struct StreamSample {
    std::int64_t rate_ns = 0;         // the receivers' newest status second (CLOCK_REALTIME)
    std::map<int, double> slab_gbps;  // by slab index
    double total_gbps = 0;
    double loss_percent = 0;          // of the last finished step, all slabs
    double latency_ms = -1;           // the newest step's sent->published, slowest slab; -1 not known
    std::int64_t shown_step = -1;
};

class StreamHistory {
public:
    explicit StreamHistory(double window_seconds = 60) : window_ns_(static_cast<std::int64_t>(window_seconds * 1e9)) {}

    // Takes the figures gathered now; true when they hold a status second the
    // history did not have (the receivers report once a second, the monitor
    // asks more often), which is then added and the oldest beyond the window
    // dropped.
    bool add(const std::vector<SlabFigures>& slabs);
    void clear() { samples_.clear(); }

    const std::deque<StreamSample>& samples() const { return samples_; }
    // Every slab index in the window, ascending.
    std::vector<int> slabs() const;
    // Seconds of sample i since the window's first sample.
    double seconds(std::size_t i) const;
    // "seconds,time_ns,total_gbps,loss_percent,step_shown,latency_ms,slab_<k>_gbps..." and one line
    // per sample (latency_ms empty where not known).
    std::string csv() const;

private:
    std::int64_t window_ns_;
    std::deque<StreamSample> samples_;
};

}  // namespace slabcast
