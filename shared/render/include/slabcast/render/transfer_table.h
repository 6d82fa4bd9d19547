// The transfer function as the ray marcher reads it: a colour and an opacity
// for each of kEntries values evenly spread over [lo, hi] (values outside
// take the nearest end, as VTK's transfer functions clamp), the opacity
// already corrected for the sample distance.
#pragma once

#include <cstdint>
#include <vector>

namespace slabcast::render {

class TransferTable {
public:
    // As many entries as VTK's CPU ray caster has (15 bits): a transfer
    // function laid out in log(value), as slabcast_render.py's, changes over
    // a few hundredths of the range at its low end.
    static constexpr int kEntries = 32768;
    // An opacity this small is none: VTK's CPU ray caster keeps opacities in
    // 15 bits and rounds it to zero too, so the picture matches it, and
    // bricks whose values all map here are skipped whole.
    static constexpr float kLeastOpacity = 0.5f / 32767.0f;

    // `rgb`: kEntries red, green, blue triples in 0..1; `opacity`: kEntries
    // opacities per `unit_distance` of ray (vtkVolumeProperty's scalar
    // opacity unit distance), corrected here to `sample_distance`:
    // 1 - (1 - a)^(sample / unit).
    void set(float lo, float hi, const float* rgb, const float* opacity, double sample_distance,
             double unit_distance);

    float lo() const { return lo_; }
    float hi() const { return hi_; }
    // The entry of value v, as a float index (the marcher rounds it).
    float position(float v) const { return (v - lo_) * scale_; }
    float scale() const { return scale_; }  // entries per unit of value
    int index(float v) const;
    // Premultiplied red, green, blue and the opacity of entry i.
    const float* entry(int i) const { return &rgba_[4 * static_cast<std::size_t>(i)]; }
    // Whether any value in [a, b] has an opacity (not kLeastOpacity or less).
    bool any_opacity(float a, float b) const;
    // The share of entries with no opacity.
    double transparent_share() const { return 1.0 - static_cast<double>(opaque_before_[kEntries]) / kEntries; }

private:
    float lo_ = 0, hi_ = 1, scale_ = 0;
    std::vector<float> rgba_ = std::vector<float>(4 * kEntries);
    std::vector<std::int32_t> opaque_before_ = std::vector<std::int32_t>(kEntries + 1);  // entries with opacity in [0, i)
};

}  // namespace slabcast::render
