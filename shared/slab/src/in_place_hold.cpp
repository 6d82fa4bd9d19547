#include "slabcast/in_place_hold.h"

#include "slabcast/publication.h"

#include <algorithm>

namespace slabcast {

namespace {
std::uint64_t newest_number(const SlabMapping& m) {
    std::uint64_t n = 0;
    for (const Publication& p : held_publications(m)) n = std::max(n, p.number);
    return n;
}
}  // namespace

bool InPlaceHold::may_hold(const std::map<int, SlabBuffer>& buffers) {
    std::map<int, std::uint64_t> shown;
    for (const auto& [index, b] : buffers) {
        if (!b.pin || !b.mapping) {  // not a publication (Newest data): nothing held across frames
            shown_.clear();
            then_.clear();
            return true;
        }
        shown[index] = b.pin->publication().number;
    }
    if (shown != shown_) {
        shown_ = std::move(shown);
        then_.clear();
        for (const auto& [index, b] : buffers) then_[index] = newest_number(*b.mapping);
        return true;
    }
    for (const auto& [index, b] : buffers)
        if (newest_number(*b.mapping) > then_[index] + kPublicationsOn) return false;
    return true;
}

}  // namespace slabcast
