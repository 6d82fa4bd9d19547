#include "slabcast/slab_figures_wire.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace slabcast {
namespace {

template <typename T>
void put(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Reads fields in order from a message; any read past its end fails every
// later one, so a decoder checks once, at the end.
class Fields {
public:
    Fields(const void* bytes, std::size_t length) : p_(static_cast<const char*>(bytes)), left_(length) {}
    template <typename T>
    T take() {
        T v{};
        if (!ok_ || left_ < sizeof v) {
            ok_ = false;
            return v;
        }
        std::memcpy(&v, p_, sizeof v);
        p_ += sizeof v;
        left_ -= sizeof v;
        return v;
    }
    std::string take_text(std::size_t n) {
        if (!ok_ || left_ < n) {
            ok_ = false;
            return {};
        }
        std::string s(p_, n);
        p_ += n;
        left_ -= n;
        return s;
    }
    bool whole() const { return ok_ && left_ == 0; }
    bool ok() const { return ok_; }

private:
    const char* p_;
    std::size_t left_;
    bool ok_ = true;
};

}  // namespace

std::string encode_figures(const std::vector<SlabFigures>& slabs) {
    const std::size_t count = std::min(slabs.size(), kMaxFigureSlabs);
    std::string out;
    put<std::uint32_t>(out, static_cast<std::uint32_t>(count));
    for (std::size_t i = 0; i < count; ++i) {
        const SlabFigures& f = slabs[i];
        const std::size_t host = std::min(f.host.size(), kMaxFigureHostBytes);
        put<std::int32_t>(out, f.slab);
        put<std::uint8_t>(out, static_cast<std::uint8_t>(host));
        out.append(f.host, 0, host);
        put(out, f.shown_step);
        put(out, f.shown_age_ms);
        put(out, f.shown_completeness);
        put(out, f.writing_step);
        put(out, f.last_step);
        put(out, f.last_step_loss_percent);
        put(out, f.gbps);
        put(out, f.rate_ns);
        put(out, f.bytes);
        put(out, f.packets);
        put(out, f.rejected);
        put(out, f.stale);
        put(out, f.duplicates);
        put(out, f.dropped_steps);
        put<std::uint8_t>(out, f.receiving ? 1 : 0);
        put<std::uint8_t>(out, f.no_step ? 1 : 0);
        put(out, f.last_published_step);
        put(out, f.last_published_ns);
        put(out, f.latency_ms);
        put<std::int32_t>(out, f.buffers);
        put<std::int32_t>(out, f.pinned);
        put<std::int32_t>(out, f.pinned_peak);
        const std::size_t readers = std::min(f.readers.size(), kMaxFigureReadersBytes);
        put<std::uint8_t>(out, static_cast<std::uint8_t>(readers));
        out.append(f.readers, 0, readers);
    }
    return out;
}

std::optional<std::vector<SlabFigures>> decode_figures(const void* bytes, std::size_t length) {
    Fields in(bytes, length);
    const auto count = in.take<std::uint32_t>();
    if (!in.ok() || count > kMaxFigureSlabs) return std::nullopt;
    std::vector<SlabFigures> slabs;
    for (std::uint32_t i = 0; i < count && in.ok(); ++i) {
        SlabFigures f;
        f.slab = in.take<std::int32_t>();
        f.host = in.take_text(in.take<std::uint8_t>());
        f.shown_step = in.take<std::int64_t>();
        f.shown_age_ms = in.take<double>();
        f.shown_completeness = in.take<double>();
        f.writing_step = in.take<std::int64_t>();
        f.last_step = in.take<std::int64_t>();
        f.last_step_loss_percent = in.take<double>();
        f.gbps = in.take<double>();
        f.rate_ns = in.take<std::int64_t>();
        f.bytes = in.take<std::uint64_t>();
        f.packets = in.take<std::uint64_t>();
        f.rejected = in.take<std::uint64_t>();
        f.stale = in.take<std::uint64_t>();
        f.duplicates = in.take<std::uint64_t>();
        f.dropped_steps = in.take<std::uint64_t>();
        const auto receiving = in.take<std::uint8_t>();
        if (receiving > 1) return std::nullopt;
        f.receiving = receiving == 1;
        const auto no_step = in.take<std::uint8_t>();
        if (no_step > 1) return std::nullopt;
        f.no_step = no_step == 1;
        f.last_published_step = in.take<std::int64_t>();
        f.last_published_ns = in.take<std::int64_t>();
        f.latency_ms = in.take<double>();
        f.buffers = in.take<std::int32_t>();
        f.pinned = in.take<std::int32_t>();
        f.pinned_peak = in.take<std::int32_t>();
        // Counts of buffers, checked like anything that arrives.
        for (int v : {f.buffers, f.pinned, f.pinned_peak})
            if (v < 0 || v > kMaxBuffers) return std::nullopt;
        f.readers = in.take_text(in.take<std::uint8_t>());
        slabs.push_back(std::move(f));
    }
    if (!in.whole()) return std::nullopt;
    return slabs;
}

}  // namespace slabcast
