#include "slabcast/step_news.h"

namespace slabcast {

StepNews& StepNews::instance() {
    // Never destroyed: a reader destroyed while the process exits (after the
    // function-local statics, as pvpython's sys.exit does) still forgets its
    // key here; a destroyed registry hung that exit.
    static StepNews* news = new StepNews;
    return *news;
}

std::uint64_t StepNews::new_key() {
    std::lock_guard lock(mutex_);
    return next_key_++;
}

void StepNews::shows(std::uint64_t key, std::vector<Shown> shown) {
    std::lock_guard lock(mutex_);
    watches_[key] = std::move(shown);
}

void StepNews::forget(std::uint64_t key) {
    std::lock_guard lock(mutex_);
    watches_.erase(key);
}

bool StepNews::newer(std::uint64_t key) const {
    std::lock_guard lock(mutex_);
    const auto it = watches_.find(key);
    if (it == watches_.end() || it->second.empty()) return false;
    for (const Shown& s : it->second) {
        // Each publication counts in live.publications once it is visible,
        // and its number is that count (publish_buffer): one pread a slab,
        // as the live poll reads it (live_slabs.h).
        SlabHeader header{};
        if (!s.slab || !s.slab->read_header(header)) return false;
        if (header.live.publications.load(std::memory_order_relaxed) <= s.publication) return false;
    }
    return true;
}

}  // namespace slabcast
