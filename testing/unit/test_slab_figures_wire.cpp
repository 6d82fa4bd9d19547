// The stream figures as bytes between processes: every field survives the
// trip, and a message cut short, padded, or claiming more slabs than it holds
// or than one message may hold is refused whole.
#include "slabcast/slab_figures_wire.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>

using namespace slabcast;

namespace {
SlabFigures full(int slab, const std::string& host) {
    SlabFigures f;
    f.slab = slab;
    f.host = host;
    f.shown_step = 41;
    f.shown_age_ms = 12.5;
    f.shown_completeness = 0.75;
    f.writing_step = 42;
    f.last_step = 40;
    f.last_step_loss_percent = 1.25;
    f.gbps = 9.5;
    f.rate_ns = 1700000000123456789;
    f.bytes = 1ull << 40;
    f.packets = 123456;
    f.rejected = 3;
    f.stale = 4;
    f.duplicates = 5;
    f.dropped_steps = 6;
    f.receiving = true;
    f.no_step = true;
    f.last_published_step = 39;
    f.last_published_ns = 1700000000000000001;
    f.latency_ms = 123.25;
    f.buffers = 5;
    f.pinned = 3;
    f.pinned_peak = 4;
    f.readers = "pvbatch[12] 2 (steps 38, 39)";
    return f;
}
}  // namespace

TEST_CASE("stream figures survive encoding, every field") {
    const std::vector<SlabFigures> sent = {full(0, "render1"), full(7, "")};
    const std::string bytes = encode_figures(sent);
    const auto got = decode_figures(bytes.data(), bytes.size());
    REQUIRE(got);
    REQUIRE(got->size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const SlabFigures &a = sent[i], &b = (*got)[i];
        CHECK(b.slab == a.slab);
        CHECK(b.host == a.host);
        CHECK(b.shown_step == a.shown_step);
        CHECK(b.shown_age_ms == a.shown_age_ms);
        CHECK(b.shown_completeness == a.shown_completeness);
        CHECK(b.writing_step == a.writing_step);
        CHECK(b.last_step == a.last_step);
        CHECK(b.last_step_loss_percent == a.last_step_loss_percent);
        CHECK(b.gbps == a.gbps);
        CHECK(b.rate_ns == a.rate_ns);
        CHECK(b.bytes == a.bytes);
        CHECK(b.packets == a.packets);
        CHECK(b.rejected == a.rejected);
        CHECK(b.stale == a.stale);
        CHECK(b.duplicates == a.duplicates);
        CHECK(b.dropped_steps == a.dropped_steps);
        CHECK(b.receiving == a.receiving);
        CHECK(b.no_step == a.no_step);
        CHECK(b.last_published_step == a.last_published_step);
        CHECK(b.last_published_ns == a.last_published_ns);
        CHECK(b.latency_ms == a.latency_ms);
        CHECK(b.buffers == a.buffers);
        CHECK(b.pinned == a.pinned);
        CHECK(b.pinned_peak == a.pinned_peak);
        CHECK(b.readers == a.readers);
    }
    CHECK(bytes.size() ==
          4 + 2 * (kMaxFigureSlabBytes - kMaxFigureHostBytes - kMaxFigureReadersBytes + sent[0].readers.size()) + 7);
    const auto none = decode_figures(encode_figures({}).data(), 4);
    REQUIRE(none);
    CHECK(none->empty());
}

TEST_CASE("buffer counts past the most a slab has are refused") {
    SlabFigures f = full(1, "h");
    f.pinned_peak = kMaxBuffers + 1;
    const std::string bytes = encode_figures({f});
    CHECK_FALSE(decode_figures(bytes.data(), bytes.size()));
    f.pinned_peak = kMaxBuffers;
    const std::string fine = encode_figures({f});
    CHECK(decode_figures(fine.data(), fine.size()));
}

TEST_CASE("a host name past the limit is cut, never refused") {
    SlabFigures f = full(1, std::string(1000, 'h'));
    f.readers = std::string(1000, 'r');
    const std::string bytes = encode_figures({f});
    CHECK(bytes.size() == 4 + kMaxFigureSlabBytes);
    const auto got = decode_figures(bytes.data(), bytes.size());
    REQUIRE(got);
    CHECK((*got)[0].host == std::string(kMaxFigureHostBytes, 'h'));
    CHECK((*got)[0].readers == std::string(kMaxFigureReadersBytes, 'r'));
}

TEST_CASE("stream figures that are not one whole message are refused") {
    const std::string bytes = encode_figures({full(0, "a"), full(1, "bb")});
    for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_figures(bytes.data(), n));
    const std::string padded = bytes + '\0';
    CHECK_FALSE(decode_figures(padded.data(), padded.size()));
    std::string more = bytes;
    const std::uint32_t three = 3;
    std::memcpy(more.data(), &three, 4);
    CHECK_FALSE(decode_figures(more.data(), more.size()));
    std::string huge(4, '\0');
    const auto too_many = static_cast<std::uint32_t>(kMaxFigureSlabs + 1);
    std::memcpy(huge.data(), &too_many, 4);
    CHECK_FALSE(decode_figures(huge.data(), huge.size()));
    CHECK_FALSE(decode_figures(nullptr, 0));
    // After the flags: the last publication (step, time, latency), the buffer counts, the readers.
    const std::size_t tail = 3 * 8 + 3 * 4 + 1 + full(1, "").readers.size();
    for (const std::size_t from_end : {tail + 2, tail + 1}) {  // receiving, no_step: a flag is 0 or 1
        std::string flag = bytes;
        flag[flag.size() - from_end] = 2;
        CHECK_FALSE(decode_figures(flag.data(), flag.size()));
    }
}
