#include "slabcast/step_news.h"

#include "slabcast/publication.h"

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
        // A slab cut short under its mapping is the reader's to report; its
        // pages are not touched here.
        if (!s.slab || !s.slab->not_truncated()) return false;
        bool since = false;
        for (int b = 0; b < s.slab->buffers() && !since; ++b)
            if (const std::optional<Publication> p = read_publication(*s.slab, b)) since = p->number > s.publication;
        if (!since) return false;
    }
    return true;
}

}  // namespace slabcast
