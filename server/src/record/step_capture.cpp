#include "record/step_capture.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace slabcast {

StepCapture::StepCapture(const Dims& dims)
    : dims_(dims),
      values_(new float[static_cast<std::size_t>(dims.count())]),
      ages_(new std::uint8_t[static_cast<std::size_t>(dims.count())]) {
    std::memset(values_.get(), 0, static_cast<std::size_t>(dims.count()) * sizeof(float));
    std::memset(ages_.get(), 0, static_cast<std::size_t>(dims.count()));
}

void StepCapture::take(const StepChoice& choice, std::int64_t started_ns) {
    const std::size_t plane = static_cast<std::size_t>(dims_.plane());
    report_ = RecordedStep{};
    report_.started_ns = started_ns;
    report_.complete = true;
    std::int64_t covered = 0;
    for (const auto& [index, buffer] : choice.buffers) {
        if (!buffer.pin) throw std::logic_error("StepCapture: a slab's buffer is not pinned");
        const SlabGeometry& g = buffer.mapping->geometry();
        if (!(buffer.mapping->dims() == dims_) || g.z_begin < 0 || g.z_end > dims_.nz)
            throw std::runtime_error(buffer.mapping->path() + ": its volume is not the recording's");
        const std::size_t from = static_cast<std::size_t>(g.z_begin - g.stored_z_begin) * plane;
        const std::size_t to = static_cast<std::size_t>(g.z_begin) * plane;
        const std::size_t n = static_cast<std::size_t>(g.owned_planes()) * plane;
        std::memcpy(values_.get() + to, buffer.values() + from, n * sizeof(float));
        std::memcpy(ages_.get() + to, buffer.ages() + from, n);
        covered += g.owned_planes();
        const Publication& p = buffer.pin->publication();
        report_.records += p.records;
        report_.expected += p.expected;
        report_.holes += p.holes;
        report_.repaired += p.repaired;
        report_.complete = report_.complete && p.complete;
        report_.published_ns = std::max(report_.published_ns, p.published_ns);
    }
    if (covered != dims_.nz) throw std::runtime_error("StepCapture: the slabs do not cover the volume");
    number_ = static_cast<int>(choice.step);
}

StepToRecord StepCapture::step() const { return StepToRecord{number_, values_.get(), ages_.get(), report_}; }

}  // namespace slabcast
