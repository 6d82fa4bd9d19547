#include "slabcast/step_choice.h"

#include <algorithm>
#include <set>

namespace slabcast {

std::optional<StepChoice> choose_step(const std::map<int, SlabMappingPtr>& slabs, std::int64_t step,
                                      const std::map<int, PinnedPublicationPtr>& held) {
    StepChoice c;
    c.step = step;
    c.whole = true;
    for (const auto& [index, mapping] : slabs) {
        PinnedPublicationPtr pin;
        if (auto it = held.find(index); it != held.end() && it->second && it->second->mapping() == mapping &&
                                        it->second->publication().step == step)
            pin = it->second;
        else
            pin = pin_step(mapping, step);
        if (!pin) return std::nullopt;
        c.buffers[index] = SlabBuffer{mapping, pin->publication().buffer, pin};
    }
    return c;
}

StepChoice choose_whole_step(const std::map<int, SlabMappingPtr>& slabs) {
    // Pins are taken after the look: a writer that took one of the buffers
    // meanwhile makes the pin fail, and the next look sees it gone.
    for (int attempt = 0; attempt < 4; ++attempt) {
        std::vector<std::vector<Publication>> held;
        for (const auto& kv : slabs) held.push_back(held_publications(*kv.second));
        const auto step = newest_common_step(held);
        if (!step) return StepChoice{};
        if (auto c = choose_step(slabs, *step)) return *c;
    }
    return StepChoice{};
}

StepChoice choose_newest_data(const std::map<int, SlabMappingPtr>& slabs) {
    StepChoice c;
    bool first = true;
    for (const auto& [index, mapping] : slabs) {
        SlabHeader h{};
        std::int64_t step = -1;
        if (!mapping->read_header(h)) continue;
        const int writing = h.live.writing_buffer.load();
        if (writing >= 0 && writing < mapping->buffers()) {
            // Being written: shown as it fills, and not pinned (the writer has it).
            c.buffers[index] = SlabBuffer{mapping, writing, nullptr};
            step = h.live.step.load();
        } else if (auto p = newest_publication(*mapping)) {
            PinnedPublicationPtr pin = pin_publication(mapping, *p);
            c.buffers[index] = SlabBuffer{mapping, p->buffer, pin};
            step = p->step;
        } else {
            continue;
        }
        c.step = first ? step : std::min(c.step, step);
        first = false;
    }
    return c;
}

std::vector<HeldStep> steps_held_by_all(const std::map<int, SlabMappingPtr>& slabs) {
    std::map<std::int64_t, HeldStep> common;
    bool first = true;
    for (const auto& kv : slabs) {
        std::map<std::int64_t, std::int64_t> mine;  // step -> its newest publication time in this slab
        for (const Publication& p : held_publications(*kv.second)) {
            auto& t = mine[p.step];
            t = std::max(t, p.published_ns);
        }
        if (first) {
            for (const auto& [step, ns] : mine) common[step] = HeldStep{step, ns};
            first = false;
            continue;
        }
        for (auto it = common.begin(); it != common.end();) {
            auto m = mine.find(it->first);
            if (m == mine.end()) {
                it = common.erase(it);
                continue;
            }
            it->second.oldest_published_ns = std::min(it->second.oldest_published_ns, m->second);
            ++it;
        }
    }
    std::vector<HeldStep> out;
    for (const auto& kv : common) out.push_back(kv.second);
    return out;
}

std::optional<std::int64_t> agreed_step(const std::vector<std::vector<HeldStep>>& per_rank) {
    if (per_rank.empty()) return std::nullopt;
    std::map<std::int64_t, std::pair<int, std::int64_t>> seen;  // step -> (ranks holding it, oldest time)
    for (const auto& rank : per_rank) {
        std::set<std::int64_t> once;
        for (const HeldStep& h : rank) {
            if (!once.insert(h.step).second) continue;
            auto [it, fresh] = seen.try_emplace(h.step, 0, h.oldest_published_ns);
            ++it->second.first;
            it->second.second = std::min(it->second.second, h.oldest_published_ns);
        }
    }
    std::optional<std::int64_t> best;
    std::int64_t best_ns = 0;
    for (const auto& [step, v] : seen) {
        if (v.first != static_cast<int>(per_rank.size())) continue;
        // Published last everywhere; ties (same time) go to the larger step, the same on every rank.
        if (!best || v.second > best_ns || (v.second == best_ns && step > *best)) {
            best = step;
            best_ns = v.second;
        }
    }
    return best;
}

}  // namespace slabcast
