#include "slabcast/fec_report.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace slabcast::fec {

namespace {
constexpr std::int32_t kReportMagic = static_cast<std::int32_t>(0x804C4353u);  // "SCL" 0x80
constexpr std::uint8_t kReportVersion = 1;
constexpr double kMostDispersion = 64;  // bunches larger than this are parity's ceiling's problem

// P(X > m) for X ~ Binomial(n, p), summed from the top in logarithms (n <= 255).
double tail_above(int n, int m, double p) {
    if (m >= n || p <= 0) return 0;
    if (p >= 1) return 1;
    double sum = 0;
    for (int x = m + 1; x <= n; ++x)
        sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(x + 1.0) - std::lgamma(n - x + 1.0) + x * std::log(p) +
                        (n - x) * std::log1p(-p));
    return sum;
}
}  // namespace

void write_report(std::uint8_t* out, const Report& r) {
    std::memset(out, 0, kReportBytes);
    std::memcpy(out, &kReportMagic, 4);
    out[4] = kReportVersion;
    std::memcpy(out + 8, &r.slab, 4);
    std::memcpy(out + 16, &r.datagrams, 8);
    std::memcpy(out + 24, &r.lost, 8);
    std::memcpy(out + 32, &r.groups, 8);
    std::memcpy(out + 40, &r.lost_squares, 8);
}

bool parse_report(const std::uint8_t* bytes, std::size_t length, Report& out) {
    if (length != kReportBytes) return false;
    std::int32_t magic = 0;
    std::uint32_t reserved = 0;
    std::memcpy(&magic, bytes, 4);
    std::memcpy(&reserved, bytes + 12, 4);
    if (magic != kReportMagic || bytes[4] != kReportVersion || bytes[5] || bytes[6] || bytes[7] || reserved) return false;
    std::memcpy(&out.slab, bytes + 8, 4);
    std::memcpy(&out.datagrams, bytes + 16, 8);
    std::memcpy(&out.lost, bytes + 24, 8);
    std::memcpy(&out.groups, bytes + 32, 8);
    std::memcpy(&out.lost_squares, bytes + 40, 8);
    // A group's lost is at most its datagrams (255): the sum of squares is at
    // most 255 x lost (divided, not multiplied: no overflow).
    return out.slab >= 0 && out.lost <= out.datagrams && out.groups <= out.datagrams && out.lost <= out.lost_squares &&
           out.lost_squares / 255 <= out.lost;
}

void LossTracker::take(const Report& r) {
    // Totals that fell: the receiver started again, and counts from 0.
    const bool again = any_ && (r.datagrams < last_.datagrams || r.lost < last_.lost || r.groups < last_.groups ||
                                r.lost_squares < last_.lost_squares);
    const Report base = any_ && !again ? last_ : Report{};
    any_ = true;
    last_ = r;
    const auto more = static_cast<double>(r.datagrams - base.datagrams);
    if (more <= 0) return;
    // What is older than the memory fades: the old figures scaled so that
    // old and new together are about kMemory datagrams.
    const auto memory = static_cast<double>(kMemory);
    if (datagrams_ + more > memory) {
        const double keep = more >= memory ? 0.0 : (memory - more) / datagrams_;
        datagrams_ *= keep;
        lost_ *= keep;
        groups_ *= keep;
        squares_ *= keep;
    }
    datagrams_ += more;
    lost_ += static_cast<double>(r.lost - base.lost);
    groups_ += static_cast<double>(r.groups - base.groups);
    squares_ += static_cast<double>(r.lost_squares - base.lost_squares);
}

double LossTracker::dispersion() const {
    if (groups_ < 1 || lost_ <= 0) return 1;
    const double mean = lost_ / groups_, variance = squares_ / groups_ - mean * mean;
    return std::clamp(variance / mean, 1.0, kMostDispersion);
}

int parity_for_loss(int k, double datagrams, double lost, double dispersion, int low, int high) {
    if (!(datagrams >= kLeastDatagrams)) return high;  // (NaN too)
    const double p = std::clamp(lost / datagrams, 0.0, 1.0);
    const double d = std::isfinite(dispersion) ? std::clamp(dispersion, 1.0, kMostDispersion) : kMostDispersion;
    const double bound = std::min(1.0, p + 3.0 * std::sqrt(d * p * (1.0 - p) / datagrams) + 3.0 / datagrams);
    for (int m = low; m < high; ++m)
        if (tail_above(static_cast<int>(std::lround((k + m) / d)), static_cast<int>(m / d), bound) <= kGroupFailure)
            return m;
    return high;
}

}  // namespace slabcast::fec
