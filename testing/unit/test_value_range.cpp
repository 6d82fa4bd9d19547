// A step's range as VTK reports an array's (NaN left out; the finite range
// leaves out infinities too), measured in one SSE2 pass over any length and
// alignment, and found for a reader's extent from the receiver's measure of
// each slab's owned and ghost planes where the extent takes them whole, the
// rest read from real slabs in /dev/shm.
#include "slab_volume.h"

#include "slabcast/extent_values.h"
#include "slabcast/slab_selection.h"
#include "slabcast/step_choice.h"
#include "slabcast/step_ranges.h"
#include "slabcast/value_range.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <vector>

using namespace slabcast;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The ranges one value at a time, as VTK's own pass finds them.
ValueRanges reference(const std::vector<float>& v, std::size_t from, std::size_t n) {
    ValueRanges r;
    for (std::size_t i = from; i < from + n; ++i) {
        const float x = v[i];
        if (std::isnan(x)) continue;
        r.values.merge(MinMax{x, x});
        if (std::isfinite(x)) r.finite.merge(MinMax{x, x});
    }
    return r;
}

// Random values with NaN and infinities at `specials`.
std::vector<float> values_with(std::size_t n, unsigned seed, std::initializer_list<std::pair<std::size_t, float>> specials) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-100.f, 100.f);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    for (const auto& [at, x] : specials) v[at] = x;
    return v;
}

}  // namespace

TEST_CASE("value ranges match a value-at-a-time pass at every length and alignment, NaN and infinities included") {
    const std::vector<float> v = values_with(300, 7, {{17, std::nanf("")}, {40, kInf}, {41, -kInf}, {99, std::nanf("")}});
    for (std::size_t from : {0u, 1u, 3u, 42u}) {
        for (std::size_t n : {0u, 1u, 3u, 7u, 8u, 9u, 33u, 200u}) {
            INFO("from " << from << " n " << n);
            const ValueRanges want = reference(v, from, n);
            const ValueRanges got = value_ranges(v.data() + from, n);
            CHECK(got.values.empty() == want.values.empty());
            CHECK(got.finite.empty() == want.finite.empty());
            if (!want.values.empty()) {
                CHECK(got.values.lo == want.values.lo);
                CHECK(got.values.hi == want.values.hi);
            }
            if (!want.finite.empty()) {
                CHECK(got.finite.lo == want.finite.lo);
                CHECK(got.finite.hi == want.finite.hi);
            }
            const MinMax m = min_max(v.data() + from, n);
            CHECK(m.empty() == want.values.empty());
            if (!m.empty()) {
                CHECK(m.lo == want.values.lo);
                CHECK(m.hi == want.values.hi);
                CHECK(m.infinite() == (from <= 41 && from + n > 40));
            }
        }
    }
}

TEST_CASE("copying values, packed or out of quad records, measures them in the same pass") {
    const std::vector<float> v = values_with(97, 3, {{10, std::nanf("")}, {60, kInf}});
    std::vector<std::uint8_t> packed(1 + 4 * v.size());  // not 4-byte aligned
    std::memcpy(packed.data() + 1, v.data(), 4 * v.size());
    std::vector<std::uint8_t> records(16 * v.size(), 0xee);  // {x, y, z, v}: coordinates never copied
    for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(records.data() + 16 * i + 12, &v[i], 4);
    for (std::size_t at : {0u, 1u, 3u}) {       // out's offset from a 16-byte boundary
        for (std::size_t n : {0u, 3u, 4u, 9u, 97u}) {
            INFO("at " << at << " n " << n);
            const ValueRanges want = reference(v, 0, n);
            for (std::size_t stride : {4u, 16u, 8u}) {
                std::vector<std::uint8_t> in(stride * n + 16, 0);
                const std::uint8_t* from = stride == 4 ? packed.data() + 1 : records.data() + 12;
                if (stride == 8)
                    for (std::size_t i = 0; i < n; ++i) std::memcpy(in.data() + 8 * i, &v[i], 4);
                alignas(16) float out[112];
                std::fill(out, out + 112, -1.f);
                const MinMax got = copy_min_max(out + at, stride == 8 ? in.data() : from, stride, n);
                CHECK(std::memcmp(out + at, v.data(), 4 * n) == 0);  // NaN compared bit for bit
                CHECK(out[at + n] == -1.f);
                CHECK(got.empty() == want.values.empty());
                if (!want.values.empty()) {
                    CHECK(got.lo == want.values.lo);
                    CHECK(got.hi == want.values.hi);
                }
            }
        }
    }
}

TEST_CASE("age ranges at every length") {
    std::vector<std::uint8_t> a(70, 3);
    a[5] = 1;
    a[66] = 254;
    CHECK(age_range(a.data(), 70).lo == 1);
    CHECK(age_range(a.data(), 70).hi == 254);
    CHECK(age_range(a.data() + 6, 60).lo == 3);
    CHECK(age_range(a.data() + 6, 60).hi == 3);
    CHECK(age_range(a.data(), 0).empty());
}

namespace {

const Dims kDims{8, 4, 12};  // three slabs of depth 4: planes 0-3, 4-7, 8-11

struct Shown {
    SlabPool pool;
    SlabSelection selection;
    StepChoice choice;
    std::vector<float> values;
};

// `extent` of the volume as a reader shows it: its choice of buffers, and its
// values assembled (what a pass over the output array would measure).
void show(Shown& s, const SlabVolume& v, const int extent[6]) {
    s.selection = select_slabs(v.descriptor, v.descriptor_path, extent);
    const ExtentSources sources = open_extent_sources(s.pool, v.descriptor, v.descriptor_path, s.selection);
    s.choice = choose_whole_step(sources.by_slab);
    REQUIRE(s.choice.whole);
    s.values.assign(static_cast<std::size_t>(extent_value_count(extent)), 0.f);
    if (s.selection.zero_copy_slab < 0) {
        assemble_extent(s.selection, s.choice.buffers, kDims, extent, s.values.data());
        return;
    }
    const SlabBuffer& b = s.choice.buffers.at(s.selection.zero_copy_slab);  // the piece in place
    const float* first = zero_copy_values(b, kDims, extent[4]);
    s.values.assign(first, first + s.values.size());
}

void check_same(const StepRanges& got, const std::vector<float>& values) {
    const ValueRanges want = reference(values, 0, values.size());
    CHECK(got.values.values.lo == want.values.lo);
    CHECK(got.values.values.hi == want.values.hi);
    CHECK(got.values.finite.lo == want.finite.lo);
    CHECK(got.values.finite.hi == want.finite.hi);
    CHECK(got.ages.lo == 0);
    CHECK(got.ages.hi == 0);
}

}  // namespace

TEST_CASE("a step's range comes from the receiver's measure of the planes it takes whole, the rest read") {
    // Each slab's ghost plane holds other values than its owner's (value_at
    // adds 1000 per slab): a range that took a plane from the wrong part
    // would show it.
    const SlabVolume measured(kDims, 4, {0, 1, 2}, true);
    Shown s;
    // The values read for `extent`'s ranges, which match a pass over its values.
    auto values_read = [&](const int extent[6]) {
        show(s, measured, extent);
        const auto r = published_ranges(s.selection, s.choice.buffers, kDims, extent, true);
        REQUIRE(r);
        check_same(*r, s.values);
        return r->values_read;
    };
    const int whole[6] = {0, 7, 0, 3, 0, 11};
    CHECK(values_read(whole) == 0);
    const int piece[6] = {0, 7, 0, 3, 3, 7};  // one slab with its ghost plane, as one rank maps it
    CHECK(values_read(piece) == 0);
    CHECK(s.selection.zero_copy_slab == 1);
    const int part[6] = {0, 7, 0, 3, 2, 9};  // part of the edge slabs: only their planes read
    CHECK(values_read(part) == kDims.plane() * (2 + 2));
    // Part rows are not the receiver's measure at all.
    const int rows[6] = {0, 7, 1, 2, 0, 11};
    show(s, measured, rows);
    CHECK_FALSE(published_ranges(s.selection, s.choice.buffers, kDims, rows, true));
}

TEST_CASE("a step whose writer measured nothing is read whole") {
    const SlabVolume unmeasured(kDims, 4, {0, 1, 2});
    Shown s;
    const int whole[6] = {0, 7, 0, 3, 0, 11};
    show(s, unmeasured, whole);
    const auto r = published_ranges(s.selection, s.choice.buffers, kDims, whole, true);
    REQUIRE(r);
    CHECK(r->values_read == kDims.plane() * 12);
    check_same(*r, s.values);
}
