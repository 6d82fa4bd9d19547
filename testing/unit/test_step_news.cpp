// Whether a live view's step was replaced (slabcast/step_news.h), with real
// slab files in /dev/shm: a view is replaced once every slab it reads has
// published since what it shows, by publication number, and not before.
#include "temp_shm_dir.h"

#include "slabcast/publication.h"
#include "slabcast/step_choice.h"
#include "slabcast/step_news.h"

#include <catch2/catch.hpp>

#include <memory>

using namespace slabcast;

namespace {

const Dims kDims{4, 4, 8};  // two slabs of depth 4

void publish(SlabMapping& m, std::int64_t step) {
    const int b = take_buffer(m);
    REQUIRE(b >= 0);
    publish_buffer(m, b, PublishInfo{step, 16, 16, 0, true});
}

// What `choice` shows, as the reader tells StepNews.
std::vector<StepNews::Shown> shown(const StepChoice& choice) {
    std::vector<StepNews::Shown> out;
    for (const auto& [k, b] : choice.buffers) out.push_back({b.mapping, b.pin->publication().number});
    return out;
}

}  // namespace

TEST_CASE("a view is replaced once every slab it reads has published since what it shows") {
    TempShmDir dir;
    SlabMapping writer[2] = {
        SlabMapping::create(dir.file("s.slab0"), kDims, 4, slab_geometry(kDims, 4, 0, 1), "density"),
        SlabMapping::create(dir.file("s.slab1"), kDims, 4, slab_geometry(kDims, 4, 1, 1), "density")};
    const std::map<int, SlabMappingPtr> readers{
        {0, std::make_shared<const SlabMapping>(SlabMapping::open_read_only(dir.file("s.slab0")))},
        {1, std::make_shared<const SlabMapping>(SlabMapping::open_read_only(dir.file("s.slab1")))}};
    StepNews& news = StepNews::instance();
    const std::uint64_t key = news.new_key(), other = news.new_key();
    CHECK(key != 0);
    CHECK(other != key);
    CHECK_FALSE(news.newer(key));  // nothing said yet

    for (auto& w : writer) publish(w, 5);
    const StepChoice step5 = choose_whole_step(readers);
    REQUIRE(step5.step == 5);
    news.shows(key, shown(step5));
    CHECK_FALSE(news.newer(key));
    publish(writer[0], 6);
    CHECK_FALSE(news.newer(key));  // one slab of two: step 6 is not whole
    publish(writer[1], 6);
    CHECK(news.newer(key));
    CHECK_FALSE(news.newer(other));  // another output's view is its own

    // A stream that starts its steps again (a demo's next lap) moves on too.
    news.shows(key, shown(choose_whole_step(readers)));
    CHECK_FALSE(news.newer(key));
    for (auto& w : writer) publish(w, 0);
    CHECK(news.newer(key));

    // Nothing to watch (history, data being written, paused), or forgotten.
    news.shows(key, {});
    CHECK_FALSE(news.newer(key));
    news.shows(key, shown(step5));
    news.forget(key);
    CHECK_FALSE(news.newer(key));
}
