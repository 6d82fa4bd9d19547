#include "slabcast/slab_figures.h"

#include <algorithm>
#include <cstdio>

namespace slabcast {

SlabFigures slab_figures(const SlabHeader& header, std::int64_t shown_step, const Publication* shown,
                         std::int64_t now_ns) {
    const SlabLive& live = header.live;
    SlabFigures f;
    f.slab = header.slab_index;
    f.shown_step = shown_step;
    if (shown && shown->step == shown_step && shown_step >= 0) {
        f.shown_age_ms = shown->published_ns > 0 ? static_cast<double>(now_ns - shown->published_ns) / 1e6 : -1;
        f.shown_completeness = shown->completeness();
    }
    f.writing_step = live.writing_buffer.load() >= 0 ? live.step.load() : -1;
    f.last_step = live.last_step.load();
    f.last_step_loss_percent = live.last_step_loss_ppm.load() / 1e4;
    f.rate_ns = live.rate_ns.load();
    f.gbps = static_cast<double>(live.rate_bits_per_s.load()) / 1e9;
    f.bytes = live.bytes.load();
    f.packets = live.packets.load();
    f.rejected = live.rejected.load();
    f.stale = live.stale.load();
    f.duplicates = live.duplicates.load();
    f.dropped_steps = live.dropped_steps.load();
    f.repaired = live.fec_repaired.load();
    f.unrepaired = live.fec_unrepaired.load();
    f.receiving = live.writer_pid.load() != 0;
    f.buffers = static_cast<int>(std::min<std::uint32_t>(header.buffers, kMaxBuffers));
    f.pinned = static_cast<int>(std::min<std::uint32_t>(live.pinned.load(), kMaxBuffers));
    f.pinned_peak = static_cast<int>(std::min<std::uint32_t>(live.pinned_peak.load(), kMaxBuffers));
    // A buffer being written keeps its last publication's step and time
    // (publish_buffer overwrites them only as it publishes again).
    f.no_step = true;
    std::uint64_t newest = 0;
    for (std::uint32_t b = 0; b < std::min<std::uint32_t>(header.buffers, kMaxBuffers); ++b) {
        const BufferPublication& p = header.publication[b];
        const std::uint64_t seq = p.seq.load();
        if (seq != 0 && !(seq & 1)) f.no_step = false;
        if (seq != 0 && p.number.load() > newest) {
            newest = p.number.load();
            f.last_published_step = p.step.load();
            f.last_published_ns = p.published_ns.load();
            const BufferTimes& t = header.times[b];
            f.latency_ms = t.seq == seq && t.sent_ns > 0 && f.last_published_ns > 0
                               ? static_cast<double>(f.last_published_ns - t.sent_ns) / 1e6
                               : -1;
        }
    }
    return f;
}

std::string no_step_text(const SlabFigures& f, std::int64_t now_ns) {
    std::string text = "slab " + std::to_string(f.slab) + " holds no published step: ";
    if (f.last_published_ns == 0) {
        text += "it has published none yet";
    } else {
        char ago[32];
        std::snprintf(ago, sizeof ago, "%.1f", static_cast<double>(now_ns - f.last_published_ns) / 1e9);
        text += "every buffer is being written; its last, step " + std::to_string(f.last_published_step) +
                ", was published " + ago + " s ago";
    }
    return f.receiving ? text : text + " (no receiver is writing it)";
}

std::vector<SlabFigures> slabs_without_step(const std::map<int, SlabMappingPtr>& slabs, std::int64_t now_ns) {
    std::vector<SlabFigures> without;
    bool begun = false;
    for (const auto& [index, mapping] : slabs) {
        SlabHeader h{};
        if (!mapping->read_header(h)) continue;  // cut short: the pool names it on the next look
        const SlabFigures f = slab_figures(h, -1, nullptr, now_ns);
        begun = begun || !f.no_step || f.last_published_ns != 0;
        if (f.no_step) without.push_back(f);
    }
    if (!begun) without.clear();
    return without;
}

SlabFigures total_figures(const std::vector<SlabFigures>& slabs) {
    SlabFigures t;
    if (slabs.empty()) return t;
    t.shown_step = t.writing_step = t.last_step = INT64_MAX;
    double loss = 0, completeness = 0;
    for (const SlabFigures& f : slabs) {
        t.shown_step = std::min(t.shown_step, f.shown_step);
        t.writing_step = std::min(t.writing_step, f.writing_step);
        t.last_step = std::min(t.last_step, f.last_step);
        t.shown_age_ms = std::max(t.shown_age_ms, f.shown_age_ms);
        t.latency_ms = std::max(t.latency_ms, f.latency_ms);
        t.rate_ns = std::max(t.rate_ns, f.rate_ns);
        completeness += f.shown_completeness;
        loss += f.last_step_loss_percent;
        t.gbps += f.gbps;
        t.bytes += f.bytes;
        t.packets += f.packets;
        t.rejected += f.rejected;
        t.stale += f.stale;
        t.duplicates += f.duplicates;
        t.repaired += f.repaired;
        t.unrepaired += f.unrepaired;
        t.dropped_steps += f.dropped_steps;
        t.receiving = t.receiving || f.receiving;
        t.no_step = t.no_step || f.no_step;
        // The slab nearest to dropping a step speaks for all.
        if (f.buffers - f.pinned_peak < t.buffers - t.pinned_peak || !t.buffers) {
            t.buffers = f.buffers;
            t.pinned_peak = f.pinned_peak;
        }
        t.pinned = std::max(t.pinned, f.pinned);
    }
    const double n = static_cast<double>(slabs.size());
    t.shown_completeness = completeness / n;
    t.last_step_loss_percent = loss / n;
    return t;
}

void merge_figures(std::vector<SlabFigures>& into, const std::vector<SlabFigures>& from) {
    for (const SlabFigures& f : from) {
        auto it = std::find_if(into.begin(), into.end(), [&](const SlabFigures& g) { return g.slab == f.slab; });
        if (it == into.end()) {
            into.push_back(f);
            continue;
        }
        const bool shows = f.shown_step >= 0 && (it->shown_step < 0 || f.shown_step > it->shown_step);
        if (shows || (it->shown_step == f.shown_step && f.rate_ns > it->rate_ns)) *it = f;
    }
    std::sort(into.begin(), into.end(), [](const SlabFigures& a, const SlabFigures& b) { return a.slab < b.slab; });
}

}  // namespace slabcast
