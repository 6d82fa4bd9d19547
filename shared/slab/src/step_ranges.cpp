#include "slabcast/step_ranges.h"

#include <stdexcept>

namespace slabcast {
namespace {

void take(StepRanges& r, const PartRange& p) {
    const MinMax m{p.lo, p.hi};
    r.values.values.merge(m);
    r.values.finite.merge(m);  // known: no value is an infinity
    r.ages.merge(AgeRange{p.age_lo, p.age_hi});
}

}  // namespace

std::optional<StepRanges> published_ranges(const SlabSelection& selection, const std::map<int, SlabBuffer>& by_slab,
                                           const Dims& dims, const int extent[6], bool ages) {
    if (extent[0] != 0 || extent[1] != dims.nx - 1 || extent[2] != 0 || extent[3] != dims.ny - 1) return std::nullopt;
    // Planes each slab supplies, owned and ghost apart.
    struct Use {
        std::int64_t owned = 0, ghost = 0;
    };
    // A zero-copy piece shows every plane from its one slab, ghost planes included.
    auto source = [&](const PlaneSource& p) { return selection.zero_copy_slab >= 0 ? selection.zero_copy_slab : p.slab; };
    std::map<int, Use> uses;
    for (const PlaneSource& p : selection.planes) {
        const SlabGeometry& g = by_slab.at(source(p)).mapping->geometry();
        ++(p.z >= g.z_begin ? uses[source(p)].owned : uses[source(p)].ghost);
    }
    StepRanges r;
    const std::int64_t plane = dims.plane();
    auto read = [&](int slab, const SlabBuffer& b, const SlabGeometry& g, bool owned) {
        for (const PlaneSource& p : selection.planes) {
            if (source(p) != slab || (p.z >= g.z_begin) != owned) continue;
            const std::int64_t at = (p.z - g.stored_z_begin) * plane;
            if (at < 0 || at + plane > static_cast<std::int64_t>(b.mapping->value_count()))
                throw std::logic_error("published_ranges: a plane outside its slab");
            r.values.merge(value_ranges(b.values() + at, static_cast<std::size_t>(plane)));
            if (ages) r.ages.merge(age_range(b.ages() + at, static_cast<std::size_t>(plane)));
            r.values_read += plane;
        }
    };
    for (const auto& [slab, use] : uses) {
        const SlabBuffer& b = by_slab.at(slab);
        const SlabGeometry& g = b.mapping->geometry();
        const Publication* shown = b.pin ? &b.pin->publication() : nullptr;
        if (shown && use.owned == g.owned_planes() && shown->owned_range.known) take(r, shown->owned_range);
        else if (use.owned) read(slab, b, g, true);
        if (shown && use.ghost == g.ghost_planes() && shown->ghost_range.known) take(r, shown->ghost_range);
        else if (use.ghost) read(slab, b, g, false);
    }
    return r;
}

}  // namespace slabcast
