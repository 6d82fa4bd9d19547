#include "receive/stream_watch.h"

namespace slabcast {

StreamWatch::Changes StreamWatch::update(const std::vector<Sample>& samples, std::int64_t now_ns) {
    std::set<int> active, began_step;
    for (const Sample& s : samples) {
        auto [it, first] = seen_.try_emplace(s.stream);
        Seen& seen = it->second;
        if (first || s.packets != seen.packets) active.insert(s.stream);
        if (!first && s.steps_begun != seen.steps_begun) began_step.insert(s.stream);
        seen.packets = s.packets;
        seen.steps_begun = s.steps_begun;
    }
    Changes changes;
    for (auto& [stream, seen] : seen_) {
        if (active.count(stream)) {
            seen.active_ns = now_ns;
            seen.others_moved_ns = -1;
        } else if (seen.others_moved_ns < 0) {
            for (int other : began_step)
                if (other != stream) seen.others_moved_ns = now_ns;
        }
        const bool missing = seen.others_moved_ns >= 0 && now_ns - seen.others_moved_ns >= quiet_ns_;
        if (missing && missing_.insert(stream).second) changes.missing.push_back(stream);
        if (!missing && missing_.erase(stream)) changes.back.push_back(stream);
    }
    return changes;
}

}  // namespace slabcast
