#include "slabcast/render/transfer_table.h"

#include <algorithm>
#include <cmath>

namespace slabcast::render {

void TransferTable::set(float lo, float hi, const float* rgb, const float* opacity, double sample_distance,
                        double unit_distance) {
    lo_ = lo;
    hi_ = hi > lo ? hi : lo;
    scale_ = hi_ > lo_ ? static_cast<float>((kEntries - 1) / (static_cast<double>(hi_) - lo_)) : 0.0f;
    const double exponent = unit_distance > 0 ? sample_distance / unit_distance : 1.0;
    opaque_before_[0] = 0;
    for (int i = 0; i < kEntries; ++i) {
        const double a = std::clamp(static_cast<double>(opacity[i]), 0.0, 1.0);
        float corrected = static_cast<float>(1.0 - std::pow(1.0 - a, exponent));
        if (!(corrected > kLeastOpacity)) corrected = 0.0f;
        float* e = &rgba_[4 * static_cast<std::size_t>(i)];
        for (int c = 0; c < 3; ++c) e[c] = std::clamp(rgb[3 * i + c], 0.0f, 1.0f) * corrected;
        e[3] = corrected;
        opaque_before_[i + 1] = opaque_before_[i] + (corrected > 0.0f ? 1 : 0);
    }
}

int TransferTable::index(float v) const {
    const float p = position(v);
    if (!(p > 0.0f)) return 0;  // NaN too
    if (p >= kEntries - 1) return kEntries - 1;
    return static_cast<int>(p + 0.5f);
}

bool TransferTable::any_opacity(float a, float b) const {
    const int i = index(a), j = index(b);
    return opaque_before_[j + 1] - opaque_before_[i] > 0;
}

}  // namespace slabcast::render
