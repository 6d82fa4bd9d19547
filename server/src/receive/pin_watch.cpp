#include "receive/pin_watch.h"

#include "slabcast/reader_pins.h"

#include <spdlog/spdlog.h>

#include <string>

namespace slabcast {

void PinWatch::look(const std::vector<std::unique_ptr<Stream>>& streams, StatusReporter& status) {
    struct Tell {
        const Stream* stream;
        std::uint32_t peak;
        std::uint64_t dropped;  // since the last look
    };
    std::vector<Tell> tell;
    for (const auto& s : streams) {
        const SlabLive& live = s->slab.header().live;
        const int k = s->spec.slab;
        const std::uint32_t peak = live.pinned_peak.load();
        const std::uint64_t dropped = live.dropped_steps.load();
        const std::uint64_t new_drops = dropped - dropped_seen_[k];
        dropped_seen_[k] = dropped;
        const bool tight = buffers_ > 1 && peak >= static_cast<std::uint32_t>(buffers_ - 1) && peak > warned_peak_[k];
        if (tight) warned_peak_[k] = peak;
        if (tight || new_drops) tell.push_back({s.get(), peak, new_drops});
    }
    if (tell.empty()) return;
    std::vector<const SlabMapping*> slabs;
    for (const Tell& t : tell) slabs.push_back(&t.stream->slab);
    const auto readers = readers_of(slabs);
    for (const Tell& t : tell) {
        const std::string& who = readers.at(t.stream->slab.path());
        const int k = t.stream->spec.slab;
        if (t.dropped) {
            spdlog::warn("receive: stream {}: {} step(s) dropped since the last second, readers held every one of its "
                         "{} buffers; pinning now: {}",
                         k, t.dropped, buffers_, who);
        } else {
            spdlog::warn("receive: stream {}: readers held {} of its {} buffers as a step began, the next pin drops "
                         "a step; pinning now: {}. A live view holds up to 2 (the step shown and the next), a "
                         "recorder 1, a view with History N N + 1: give receive --readers (e.g. view,view,record) or "
                         "--buffers 1 + their sum "
                         "(docs/shared-memory.md, \"Buffers and publication\")",
                         k, t.peak, buffers_, who);
        }
        status.event({{"kind", t.dropped ? "readers_held_every_buffer" : "buffers_nearly_all_pinned"},
                      {"stream", k},
                      {"pinned_peak", t.peak},
                      {"buffers", buffers_},
                      {"dropped", t.dropped},
                      {"readers", who}});
    }
}

}  // namespace slabcast
