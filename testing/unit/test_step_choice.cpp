// Which buffer of each slab a frame shows (slabcast/step_choice.h), with real
// slab files and real pins: whole steps common to every slab, pinned so the
// writer leaves them alone; the buffers being written in Newest data; and the
// ranks' agreement, the same on every rank from the same lists.
#include "temp_shm_dir.h"

#include "slabcast/in_place_hold.h"
#include "slabcast/publication.h"
#include "slabcast/step_choice.h"
#include "slabcast/step_history.h"

#include <catch2/catch.hpp>

#include <memory>

using namespace slabcast;

namespace {

const Dims kDims{4, 4, 8};  // two slabs of depth 4

struct Slabs {
    TempShmDir dir;
    SlabMapping writer[2] = {
        SlabMapping::create(dir.file("s.slab0"), kDims, 4, slab_geometry(kDims, 4, 0, 1), "density"),
        SlabMapping::create(dir.file("s.slab1"), kDims, 4, slab_geometry(kDims, 4, 1, 1), "density")};
    std::map<int, SlabMappingPtr> readers{
        {0, std::make_shared<const SlabMapping>(SlabMapping::open_read_only(dir.file("s.slab0")))},
        {1, std::make_shared<const SlabMapping>(SlabMapping::open_read_only(dir.file("s.slab1")))}};

    // Slab k writes `step` (every value = step) and, unless told not to, publishes it.
    int write(int k, std::int64_t step, bool publish = true) {
        SlabMapping& m = writer[k];
        const int b = take_buffer(m);
        REQUIRE(b >= 0);
        for (std::size_t i = 0; i < m.value_count(); ++i) m.values_rw(b)[i] = static_cast<float>(step);
        m.header_rw().live.step = step;
        if (publish) publish_buffer(m, b, PublishInfo{step, 16, 16, 0, true});
        return b;
    }
};

}  // namespace

TEST_CASE("whole steps: the newest step every slab holds, pinned on each") {
    Slabs s;
    CHECK(choose_whole_step(s.readers).step == -1);  // nothing published yet
    CHECK(choose_whole_step(s.readers).buffers.empty());
    s.write(0, 1);
    s.write(1, 1);
    s.write(0, 2);  // slab 1 has not published step 2 yet
    StepChoice c = choose_whole_step(s.readers);
    CHECK(c.step == 1);
    CHECK(c.whole);
    REQUIRE(c.buffers.size() == 2);
    for (const auto& [k, b] : c.buffers) {
        CHECK(b.pin);
        CHECK(b.values()[0] == 1.f);
        CHECK(buffer_pinned(s.writer[k].fd(), b.buffer));
    }
    // Slab 0 goes on for many steps: the pinned step-1 buffer is never taken.
    const int shown = c.buffers.at(0).buffer;
    for (int step = 3; step < 10; ++step) CHECK(s.write(0, step) != shown);
    CHECK(c.buffers.at(0).values()[0] == 1.f);
    c = StepChoice{};  // the frame is gone: its pins with it
    CHECK_FALSE(buffer_pinned(s.writer[0].fd(), shown));
    bool taken = false;
    for (int step = 10; step < 13; ++step) taken |= s.write(0, step) == shown;
    CHECK(taken);
}

TEST_CASE("a step agreed earlier is shown while every slab still holds it, with the pins already taken") {
    Slabs s;
    s.write(0, 5);
    s.write(1, 5);
    const auto agreed = choose_step(s.readers, 5);
    REQUIRE(agreed);
    std::map<int, PinnedPublicationPtr> held;
    for (const auto& [k, b] : agreed->buffers) held[k] = b.pin;
    s.write(0, 6);
    s.write(1, 6);
    const auto again = choose_step(s.readers, 5, held);
    REQUIRE(again);
    CHECK(again->buffers.at(0).pin == held.at(0));  // the same pin, not a second one
    CHECK(again->buffers.at(1).values()[0] == 5.f);
    CHECK_FALSE(choose_step(s.readers, 4));  // no slab holds step 4
}

TEST_CASE("newest data: the buffers being written, unpinned, or the newest publication between steps") {
    Slabs s;
    s.write(0, 3);
    s.write(1, 3);
    const int writing = s.write(0, 4, false);  // slab 0 is writing step 4
    const StepChoice c = choose_newest_data(s.readers);
    CHECK_FALSE(c.whole);
    CHECK(c.step == 3);  // the lowest step shown
    CHECK(c.buffers.at(0).buffer == writing);
    CHECK_FALSE(c.buffers.at(0).pin);
    CHECK(c.buffers.at(0).values()[0] == 4.f);
    CHECK(c.buffers.at(1).values()[0] == 3.f);
    CHECK(c.buffers.at(1).pin);
}

TEST_CASE("the ranks agree on the step published last everywhere, whatever order the lists come in") {
    Slabs s;
    s.write(0, 7);
    s.write(1, 7);
    s.write(0, 8);
    const auto held = steps_held_by_all(s.readers);
    REQUIRE(held.size() == 1);  // 8 only on slab 0
    CHECK(held[0].step == 7);

    // Rank lists: (step, oldest publication time among that rank's slabs).
    const std::vector<HeldStep> a{{1, 100}, {2, 200}, {3, 300}}, b{{2, 210}, {3, 290}}, c{{3, 305}, {1, 105}};
    CHECK(agreed_step({a, b, c}) == 3);
    CHECK(agreed_step({c, a, b}) == 3);
    CHECK(agreed_step({a, {{2, 250}}}) == 2);
    CHECK_FALSE(agreed_step({a, {{9, 900}}}));  // nothing in common
    CHECK_FALSE(agreed_step({}));
    // A loop back to step 1 after step 3: newer by time, not by number.
    CHECK(agreed_step({{{3, 300}, {1, 400}}, {{3, 310}, {1, 410}}}) == 1);
}

TEST_CASE("a pin is refused when the writer took the buffer between the look and the pin") {
    Slabs s;
    s.write(0, 1);
    const auto p = newest_publication(*s.readers.at(0));
    REQUIRE(p);
    s.write(0, 2);
    s.write(0, 3);  // into the third buffer, never used
    s.write(0, 4);  // step 1's buffer, the oldest publication, not pinned
    CHECK_FALSE(pin_publication(s.readers.at(0), *p));
    CHECK_FALSE(buffer_pinned(s.writer[0].fd(), p->buffer));  // and holds no lock after
}

TEST_CASE("with every other buffer pinned the writer takes the newest publication rather than drop every step") {
    Slabs s;  // 3 buffers a slab
    s.write(0, 1);
    s.write(0, 2);
    s.write(0, 3);
    // A frame in place (step 2) and the view's copy of the frame before (step 1).
    const auto one = pin_step(s.readers.at(0), 1);
    const auto two = pin_step(s.readers.at(0), 2);
    REQUIRE(one);
    REQUIRE(two);
    const int newest = newest_publication(*s.readers.at(0))->buffer;
    CHECK(s.write(0, 4) == newest);  // news, so the readers move on and let go
    CHECK(newest_publication(*s.readers.at(0))->step == 4);
    CHECK(s.readers.at(0)->values(one->publication().buffer)[0] == 1.f);
    CHECK(s.readers.at(0)->values(two->publication().buffer)[0] == 2.f);
    // Every buffer pinned: nothing to take.
    const auto four = pin_step(s.readers.at(0), 4);
    REQUIRE(four);
    std::string why;
    int pinned = -1;
    CHECK(take_buffer(s.writer[0], &why, &pinned) == -1);
    CHECK(why == "all 3 buffers pinned by readers");
    CHECK(pinned == 3);
}

TEST_CASE("the writer counts the buffers readers pin as it takes one") {
    Slabs s;  // 3 buffers a slab
    s.write(0, 1);
    s.write(0, 2);
    s.write(0, 3);
    int pinned = -1;
    const auto take = [&] {
        const int b = take_buffer(s.writer[0], nullptr, &pinned);
        publish_buffer(s.writer[0], b, PublishInfo{9, 16, 16, 0, true});
        return pinned;
    };
    CHECK(take() == 0);
    {
        const auto shown = pin_publication(s.readers.at(0), *newest_publication(*s.readers.at(0)));
        REQUIRE(shown);
        CHECK(take() == 1);  // the newest is taken last: the oldest was free, the pin counted all the same
        const auto before = pin_publication(s.readers.at(0), *newest_publication(*s.readers.at(0)));
        REQUIRE(before);
        CHECK(take() == 2);
    }
    CHECK(take() == 0);
}

TEST_CASE("the buffers readers need: one to write into, and what each pins at once") {
    CHECK(buffers_for_readers(parse_reader_mix("view")) == kDefaultBuffers);
    CHECK(buffers_for_readers(parse_reader_mix("view,view")) == 5);
    CHECK(buffers_for_readers(parse_reader_mix("view,record")) == 4);
    CHECK(buffers_for_readers(parse_reader_mix("history:4")) == 6);  // StepHistory::depth_allowed(4, 6) == 4
    CHECK(StepHistory::depth_allowed(4, 6) == 4);
    CHECK(buffers_for_readers(parse_reader_mix("history:1")) == 3);  // its step and the frame before
    const ReaderMix mix = parse_reader_mix("view,view,record,history:4");
    CHECK(mix.views == 2);
    CHECK(mix.recorders == 1);
    CHECK(mix.histories == std::vector<int>{4});
    CHECK(buffers_for_readers(mix) == 11);
    for (const char* bad : {"", "view,", "views", "history:", "history:0", "history:17", "history:x", "record,,view"})
        CHECK_THROWS_AS(parse_reader_mix(bad), std::invalid_argument);
    CHECK_THROWS_WITH(parse_reader_mix("view,wall"), Catch::Contains("'wall' is not one of view, record, history:N"));
    std::string many = "view";
    for (int i = 1; i <= kMaxBuffers; ++i) many += ",view";
    CHECK_THROWS_AS(parse_reader_mix(many), std::invalid_argument);
}

TEST_CASE("a step chosen again while its slabs publish on is let go of, so they can come to a newer one") {
    Slabs s;
    s.write(0, 1);
    s.write(1, 1);
    InPlaceHold hold;
    StepChoice frame = choose_whole_step(s.readers);  // on screen, in place
    CHECK(hold.may_hold(frame.buffers));
    // The slabs publish on, never the same step at once: step 1 stays the only one in common.
    for (std::uint64_t n = 0; n < InPlaceHold::kPublicationsOn; ++n) {
        s.write(0, 100 + static_cast<std::int64_t>(n));
        s.write(1, 200 + static_cast<std::int64_t>(n));
        StepChoice again = choose_whole_step(s.readers);
        REQUIRE(again.step == 1);
        CHECK(hold.may_hold(again.buffers));
        frame = std::move(again);
    }
    s.write(0, 300);
    StepChoice stuck = choose_whole_step(s.readers);
    REQUIRE(stuck.step == 1);
    CHECK_FALSE(hold.may_hold(stuck.buffers));  // copied: the frame lets go of its pins
    CHECK_FALSE(hold.may_hold(stuck.buffers));
    frame = StepChoice{};
    stuck = StepChoice{};
    s.write(1, 300);
    frame = choose_whole_step(s.readers);
    CHECK(frame.step == 300);
    CHECK(hold.may_hold(frame.buffers));  // a new step in common: in place again
}

// ---- A live reader's History (slabcast/step_history.h) ----

TEST_CASE("History keeps the last steps pinned, and the receiver's last two buffers free") {
    CHECK(StepHistory::depth_allowed(4, 6) == 4);
    CHECK(StepHistory::depth_allowed(4, 3) == 1);
    CHECK(StepHistory::depth_allowed(4, 2) == 0);
    Slabs s;  // 3 buffers a slab: History keeps 1
    StepHistory h;
    h.set_depth(StepHistory::depth_allowed(4, s.writer[0].buffers()));
    for (std::int64_t step = 1; step <= 5; ++step) {
        s.write(0, step);
        s.write(1, step);
        h.take(s.readers);
        h.take(s.readers);  // the same publications: taken once
        REQUIRE(h.steps() == std::vector<std::int64_t>{step});
        // The receiver still has a buffer for the next step on every slab.
        for (auto& w : s.writer) {
            const int b = take_buffer(w);
            CHECK(b >= 0);
            if (b >= 0) publish_buffer(w, b, PublishInfo{step, 16, 16, 0, true});
        }
    }
}

TEST_CASE("History follows the stream until a time picks an older step, and again once one picks the newest") {
    TempShmDir dir;
    SlabMapping w = SlabMapping::create(dir.file("h.slab0"), Dims{4, 4, 4}, 4,
                                        slab_geometry(Dims{4, 4, 4}, 4, 0, 1), "density", 8);
    const std::map<int, SlabMappingPtr> readers{
        {0, std::make_shared<const SlabMapping>(SlabMapping::open_read_only(dir.file("h.slab0")))}};
    const auto publish = [&](std::int64_t step) {
        const int b = take_buffer(w);
        REQUIRE(b >= 0);
        w.values_rw(b)[0] = static_cast<float>(step);
        publish_buffer(w, b, PublishInfo{step, 64, 64, 0, true});
    };
    StepHistory h;
    h.set_depth(4);
    for (std::int64_t step : {10, 11, 12, 13, 14}) {
        publish(step);
        h.take(readers);
    }
    CHECK(h.steps() == std::vector<std::int64_t>{11, 12, 13, 14});
    CHECK(h.choose(std::nullopt)->step == 14);
    CHECK(h.choose(14.0)->step == 14);
    CHECK(h.choose(12.5)->step == 12);  // moved back: the step at or below
    CHECK(!h.following());
    CHECK(h.choose(12.5)->step == 12);  // held there
    publish(15);
    h.take(readers);
    CHECK(h.choose(12.5)->step == 12);  // still held while the stream goes on
    CHECK(h.choose(3.0)->step == 12);   // below every step kept: the lowest
    CHECK(h.choose(15.0)->step == 15);  // the newest: following again
    publish(16);
    h.take(readers);
    CHECK(h.choose(15.0)->step == 16);  // the same time asked again follows the stream
    CHECK(h.choose(std::nullopt)->step == 16);
    // A stream going round its steps: step 13 heard again replaces its older recording.
    publish(13);
    h.take(readers);
    CHECK(h.steps() == std::vector<std::int64_t>{13, 14, 15, 16});
    CHECK(h.choose(std::nullopt)->step == 13);
    CHECK(h.choose(std::nullopt)->buffers.at(0).values()[0] == 13.f);
    h.set_depth(0);
    CHECK(h.steps().empty());
    CHECK(h.choose(std::nullopt) == nullptr);
}
