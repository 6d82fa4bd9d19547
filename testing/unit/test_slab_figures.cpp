// The stream monitor's figures of a slab, read from a real slab header in
// /dev/shm as the receiver leaves it, and the all-slabs row.
#include "slab_volume.h"

#include "slabcast/clock.h"
#include "slabcast/publication.h"
#include "slabcast/slab_figures.h"
#include "slabcast/stream_history.h"

#include <catch2/catch.hpp>

using namespace slabcast;

namespace {
const Dims kDims{5, 4, 12};

SlabFigures figures(int slab, std::int64_t shown, double gbps, double loss) {
    SlabFigures f;
    f.slab = slab;
    f.shown_step = shown;
    f.gbps = gbps;
    f.last_step_loss_percent = loss;
    return f;
}
}  // namespace

TEST_CASE("a slab's figures are its receiver's counters and the step shown") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    auto m = SlabMapping::create(v.slab_file(1), kDims, 4, slab_geometry(kDims, 4, 1, 1), "density");
    SlabLive& live = m.header_rw().live;
    live.packets = 1200;
    live.rejected = 3;
    live.stale = 4;
    live.duplicates = 5;
    live.last_step = 0;
    live.last_step_loss_ppm = 12500;  // 1.25%
    live.rate_bits_per_s = 2'500'000'000;
    live.rate_ns = 77;
    live.bytes = 9000;
    live.writer_pid = 4242;
    live.writing_buffer = -1;
    live.step = 0;

    const std::int64_t now = realtime_ns();
    const auto p = newest_publication(m);  // the test volume published step 0
    REQUIRE(p);
    SlabHeader h{};
    REQUIRE(m.read_header(h));
    SlabFigures f = slab_figures(h, 0, &*p, now + 250'000'000);
    CHECK(f.slab == 1);
    CHECK(f.shown_step == 0);
    CHECK(f.shown_completeness == 1.0);
    CHECK(f.shown_age_ms == Approx(static_cast<double>(now + 250'000'000 - p->published_ns) / 1e6));
    CHECK(f.shown_age_ms >= 250.0);
    CHECK(f.writing_step == -1);  // between steps
    CHECK(f.last_step == 0);
    CHECK(f.last_step_loss_percent == Approx(1.25));
    CHECK(f.gbps == Approx(2.5));
    CHECK(f.rate_ns == 77);
    CHECK(f.bytes == 9000);
    CHECK(f.packets == 1200);
    CHECK(f.rejected == 3);
    CHECK(f.stale == 4);
    CHECK(f.duplicates == 5);
    CHECK(f.receiving);
    CHECK(f.latency_ms == -1);  // the test writer's step came with no step stamp

    // A step being received; nothing shown on this host.
    const int b = take_buffer(m);
    REQUIRE(b >= 0);
    live.step = 1;
    REQUIRE(m.read_header(h));
    f = slab_figures(h, -1, nullptr, now);
    CHECK(f.writing_step == 1);
    CHECK(f.shown_step == -1);
    CHECK(f.shown_age_ms == -1);
    // A publication of another step than the one named tells nothing of it.
    f = slab_figures(h, 5, &*p, now);
    CHECK(f.shown_age_ms == -1);
    CHECK(f.shown_completeness == 0);

    // Published with its sender's stamp: the latency is its publication's
    // time less the stamp's.
    PublishInfo info;
    info.step = 1;
    info.sent_ns = realtime_ns() - 40'000'000;
    info.begun_ns = info.sent_ns + 1'000'000;
    publish_buffer(m, b, info);
    REQUIRE(m.read_header(h));
    f = slab_figures(h, -1, nullptr, now);
    CHECK(f.last_published_step == 1);
    CHECK(f.latency_ms == Approx(static_cast<double>(f.last_published_ns - info.sent_ns) / 1e6));
    CHECK(f.latency_ms >= 40.0);
    const auto q = newest_publication(m);
    REQUIRE(q);
    CHECK(q->sent_ns == info.sent_ns);
    CHECK(q->begun_ns == info.begun_ns);
}

TEST_CASE("a slab whose every buffer is being written holds no step, named with its last publication") {
    const SlabVolume v(kDims, 4, {0, 1, 2});
    auto m0 = SlabMapping::create(v.slab_file(0), kDims, 4, slab_geometry(kDims, 4, 0, 1), "density");
    auto m2 = SlabMapping::create(v.slab_file(2), kDims, 4, slab_geometry(kDims, 4, 2, 1), "density");
    const std::map<int, SlabMappingPtr> slabs = {
        {0, std::make_shared<const SlabMapping>(SlabMapping::open_read_only(v.slab_file(0)))},
        {2, std::make_shared<const SlabMapping>(SlabMapping::open_read_only(v.slab_file(2)))}};
    const std::int64_t now = realtime_ns();
    SlabHeader h{};
    REQUIRE(m2.read_header(h));
    CHECK_FALSE(slab_figures(h, -1, nullptr, now).no_step);  // the test volume published step 0
    CHECK(slabs_without_step(slabs, now).empty());

    // Every buffer of slab 2 taken for writing (its seq odd), none published since.
    m2.header_rw().live.writer_pid = 0;
    for (int b = 0; b < m2.buffers(); ++b) m2.header_rw().publication[b].seq.fetch_or(1);
    REQUIRE(m2.read_header(h));
    const SlabFigures f = slab_figures(h, -1, nullptr, now);
    CHECK(f.no_step);
    CHECK(f.last_published_step == 0);
    CHECK(f.last_published_ns > 0);
    CHECK(no_step_text(f, f.last_published_ns + 12'340'000'000) ==
          "slab 2 holds no published step: every buffer is being written; its last, step 0, was published "
          "12.3 s ago (no receiver is writing it)");
    const auto without = slabs_without_step(slabs, now);
    REQUIRE(without.size() == 1);
    CHECK(without[0].slab == 2);
    CHECK(total_figures({f, figures(0, 0, 1, 0)}).no_step);

    // Nothing ever published on any slab: the stream has not begun, nothing to name.
    for (SlabMapping* m : {&m0, &m2})
        for (int b = 0; b < m->buffers(); ++b) m->header_rw().publication[b].seq = 0;
    CHECK(slabs_without_step(slabs, now).empty());
    m2.header_rw().live.writer_pid = 7;
    REQUIRE(m2.read_header(h));
    CHECK(no_step_text(slab_figures(h, -1, nullptr, now), now) ==
          "slab 2 holds no published step: it has published none yet");
}

TEST_CASE("the all-slabs row sums rates and counters and shows the slab furthest behind") {
    std::vector<SlabFigures> slabs{figures(0, 7, 1.5, 0.0), figures(1, 6, 2.0, 2.0), figures(2, 7, 0.5, 1.0)};
    slabs[0].packets = 10;
    slabs[1].packets = 20;
    slabs[0].shown_age_ms = 40;
    slabs[1].shown_age_ms = 90;
    slabs[2].shown_age_ms = -1;
    slabs[0].latency_ms = 120;
    slabs[1].latency_ms = -1;
    slabs[2].latency_ms = 150;
    const SlabFigures t = total_figures(slabs);
    CHECK(t.latency_ms == 150);
    CHECK(t.gbps == Approx(4.0));
    CHECK(t.packets == 30);
    CHECK(t.shown_step == 6);
    CHECK(t.shown_age_ms == 90);
    CHECK(t.last_step_loss_percent == Approx(1.0));
    CHECK(total_figures({}).slab == -1);
}

TEST_CASE("figures from several ranks merge by slab, the one showing a step winning") {
    std::vector<SlabFigures> into{figures(2, -1, 1.0, 0), figures(0, 4, 1.0, 0)};
    merge_figures(into, {figures(2, 4, 1.0, 0), figures(1, 4, 1.0, 0), figures(0, -1, 1.0, 0)});
    REQUIRE(into.size() == 3);
    CHECK(into[0].slab == 0);
    CHECK(into[0].shown_step == 4);  // kept: the other rank shows nothing of slab 0
    CHECK(into[1].slab == 1);
    CHECK(into[2].slab == 2);
    CHECK(into[2].shown_step == 4);  // taken: this rank shows slab 2
}

TEST_CASE("the monitor's history keeps one sample per receiver second, a minute long, and writes CSV") {
    StreamHistory h(60);
    std::vector<SlabFigures> slabs{figures(0, 3, 1.5, 0.0), figures(2, 3, 2.5, 1.0)};
    CHECK_FALSE(h.add(slabs));  // no rate measured yet
    for (auto& f : slabs) f.rate_ns = 1'000'000'000;
    CHECK(h.add(slabs));
    CHECK_FALSE(h.add(slabs));  // the same second again
    CHECK(h.samples().back().latency_ms == -1.0);  // no stamp: not known
    for (int s = 2; s <= 70; ++s) {
        for (auto& f : slabs) f.rate_ns = std::int64_t{s} * 1'000'000'000;
        slabs[0].gbps = s;
        slabs[0].latency_ms = s == 70 ? 1250.5 : -1;
        slabs[1].latency_ms = s == 70 ? 980.0 : -1;
        CHECK(h.add(slabs));
    }
    REQUIRE(h.samples().size() == 61);  // seconds 10..70
    CHECK(h.seconds(0) == 0.0);
    CHECK(h.seconds(60) == 60.0);
    CHECK(h.samples().back().total_gbps == Approx(72.5));
    CHECK(h.samples().back().loss_percent == Approx(0.5));
    CHECK(h.samples().back().latency_ms == Approx(1250.5));  // the slowest slab's
    CHECK(h.slabs() == std::vector<int>{0, 2});
    const std::string csv = h.csv();
    CHECK(csv.rfind("seconds,time_ns,total_gbps,loss_percent,step_shown,latency_ms,slab_0_gbps,slab_2_gbps\n", 0) == 0);
    CHECK(csv.find("\n59.000,69000000000,71.500000,0.500000,3,,69.000000,2.500000\n") != std::string::npos);
    CHECK(csv.find("\n60.000,70000000000,72.500000,0.500000,3,1250.500,70.000000,2.500000\n") != std::string::npos);
}
