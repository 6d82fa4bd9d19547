// The range of a shown step's values and ages, as VTK reports an array's
// (value_range.h), without reading the step once more where the receiver
// measured it as it placed the values (slab_file.h, BufferRanges). ParaView
// asks for every array's range on every new step: at 1024^3 a rank's pass over
// its 2 GiB took 1.7-2.4 s under the stream, four times the coarse frame it
// held up (docs/performance.md, "Scale").
#pragma once

#include "slabcast/extent_values.h"
#include "slabcast/value_range.h"

#include <map>
#include <optional>

namespace slabcast {

struct StepRanges {
    ValueRanges values;
    AgeRange ages;
    // Values read here rather than taken from the receiver's measure.
    std::int64_t values_read = 0;
};

// The ranges over `extent` (whole rows and planes, at stride 1) of the step
// whose buffers are `by_slab`, as published (no copy the reader filled), each
// plane from the slab `selection` takes it from: a slab's owned planes, or
// its ghost planes, taken whole from the receiver's measure where its
// publication carries one, the rest read (`ages`: theirs too). nullopt when
// `extent` is not whole rows and planes.
std::optional<StepRanges> published_ranges(const SlabSelection& selection, const std::map<int, SlabBuffer>& by_slab,
                                           const Dims& dims, const int extent[6], bool ages);

}  // namespace slabcast
