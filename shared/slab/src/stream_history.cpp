#include "slabcast/stream_history.h"

#include <cstdio>
#include <set>

namespace slabcast {

bool StreamHistory::add(const std::vector<SlabFigures>& slabs) {
    if (slabs.empty()) return false;
    const SlabFigures total = total_figures(slabs);
    if (total.rate_ns <= 0 || (!samples_.empty() && total.rate_ns <= samples_.back().rate_ns)) return false;
    StreamSample s;
    s.rate_ns = total.rate_ns;
    for (const SlabFigures& f : slabs) s.slab_gbps[f.slab] = f.gbps;
    s.total_gbps = total.gbps;
    s.loss_percent = total.last_step_loss_percent;
    s.shown_step = total.shown_step;
    s.latency_ms = total.latency_ms;
    samples_.push_back(std::move(s));
    while (samples_.size() > 1 && samples_.back().rate_ns - samples_.front().rate_ns > window_ns_) samples_.pop_front();
    return true;
}

std::vector<int> StreamHistory::slabs() const {
    std::set<int> all;
    for (const StreamSample& s : samples_)
        for (const auto& kv : s.slab_gbps) all.insert(kv.first);
    return {all.begin(), all.end()};
}

double StreamHistory::seconds(std::size_t i) const {
    return static_cast<double>(samples_.at(i).rate_ns - samples_.front().rate_ns) / 1e9;
}

std::string StreamHistory::csv() const {
    const std::vector<int> columns = slabs();
    std::string out = "seconds,time_ns,total_gbps,loss_percent,step_shown,latency_ms";
    for (int k : columns) out += ",slab_" + std::to_string(k) + "_gbps";
    out += "\n";
    char buffer[64];
    for (std::size_t i = 0; i < samples_.size(); ++i) {
        const StreamSample& s = samples_[i];
        std::snprintf(buffer, sizeof buffer, "%.3f,", seconds(i));
        out += buffer + std::to_string(s.rate_ns);
        std::snprintf(buffer, sizeof buffer, ",%.6f,%.6f,", s.total_gbps, s.loss_percent);
        out += buffer + std::to_string(s.shown_step);
        if (s.latency_ms >= 0) {
            std::snprintf(buffer, sizeof buffer, ",%.3f", s.latency_ms);
            out += buffer;
        } else {
            out += ",";
        }
        for (int k : columns) {
            const auto it = s.slab_gbps.find(k);
            if (it == s.slab_gbps.end()) {
                out += ",";
            } else {
                std::snprintf(buffer, sizeof buffer, ",%.6f", it->second);
                out += buffer;
            }
        }
        out += "\n";
    }
    return out;
}

}  // namespace slabcast
