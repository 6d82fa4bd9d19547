#include "slabcast/fec_report.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace slabcast::fec {

namespace {
constexpr std::int32_t kReportMagic = static_cast<std::int32_t>(0x804C4353u);  // "SCL" 0x80
constexpr std::uint8_t kReportVersion = 1;

// P(X > m) for X ~ Binomial(n, p), summed from the top in logarithms (n <= 255).
double tail_above(int n, int m, double p) {
    if (p <= 0) return 0;
    if (p >= 1) return m < n ? 1 : 0;
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
    return out.slab >= 0 && out.lost <= out.datagrams;
}

void LossTracker::take(const Report& r) {
    // Totals that fell: the receiver started again, and counts from 0.
    const bool again = any_ && (r.datagrams < last_.datagrams || r.lost < last_.lost);
    const std::uint64_t more = any_ && !again ? r.datagrams - last_.datagrams : r.datagrams;
    const std::uint64_t more_lost = any_ && !again ? r.lost - last_.lost : r.lost;
    any_ = true;
    last_ = r;
    if (more == 0) return;
    // What is older than the memory fades: the old figures scaled so that
    // old and new together are about kMemory datagrams.
    if (datagrams_ + more > kMemory) {
        const double keep = more >= kMemory ? 0.0 : static_cast<double>(kMemory - more) / static_cast<double>(datagrams_);
        datagrams_ = static_cast<std::uint64_t>(static_cast<double>(datagrams_) * keep);
        lost_ = std::min(datagrams_, static_cast<std::uint64_t>(static_cast<double>(lost_) * keep));
    }
    datagrams_ += more;
    lost_ += std::min(more_lost, more);
}

int parity_for_loss(int k, std::uint64_t datagrams, std::uint64_t lost, int low, int high) {
    if (datagrams < kLeastDatagrams) return high;
    const double n = static_cast<double>(datagrams);
    const double p = static_cast<double>(std::min(lost, datagrams)) / n;
    const double bound = std::min(1.0, p + 3.0 * std::sqrt(p * (1.0 - p) / n) + 3.0 / n);
    for (int m = low; m < high; ++m)
        if (tail_above(k + m, m, bound) <= kGroupFailure) return m;
    return high;
}

}  // namespace slabcast::fec
