#include "slabcast/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace slabcast {

namespace {

struct NumberAndUnit {
    double value;
    std::string unit;
};

// "2.81G" -> {2.81, "G"}: the leading number and whatever follows it. Throws
// std::invalid_argument "<what> '<text>': expected <example>" without a number.
NumberAndUnit split_number(const std::string& text, const char* what, const char* example) {
    std::size_t used = 0;
    try {
        const double value = std::stod(text, &used);
        return {value, text.substr(used)};
    } catch (const std::exception&) {
        throw std::invalid_argument(std::string(what) + " '" + text + "': expected " + example);
    }
}

}  // namespace

double parse_rate_bps(const std::string& text) {
    auto [value, unit] = split_number(text, "rate", "a number such as 2.81G");
    for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double scale = 1;
    if (!unit.empty()) {
        switch (unit[0]) {
        case 'k': scale = 1e3; break;
        case 'm': scale = 1e6; break;
        case 'g': scale = 1e9; break;
        case 't': scale = 1e12; break;
        default: break;
        }
        std::string rest = scale == 1 ? unit : unit.substr(1);
        if (!(rest.empty() || rest == "b" || rest == "bps" || rest == "bit" || rest == "bit/s"))
            throw std::invalid_argument("rate '" + text + "': unknown unit '" + unit + "'");
    }
    // 1e15 bit/s (1000T) is far beyond any link; "1e300T" would be infinity.
    const double bps = value * scale;
    if (!std::isfinite(bps) || bps < 0 || bps > 1e15)
        throw std::invalid_argument("rate '" + text + "' must be 0 to 1000T bit/s (0 = unlimited)");
    return bps;
}

std::string format_rate(double bps) {
    char buf[64];
    if (bps >= 1e9) std::snprintf(buf, sizeof buf, "%.2f Gbit/s", bps / 1e9);
    else std::snprintf(buf, sizeof buf, "%.1f Mbit/s", bps / 1e6);
    return buf;
}

std::uint64_t parse_bytes(const std::string& text) {
    const auto [v, unit] = split_number(text, "size", "e.g. 8G or 512M");
    double scale = 1;
    if (unit == "K" || unit == "k") scale = 0x1p10;
    else if (unit == "M" || unit == "m") scale = 0x1p20;
    else if (unit == "G" || unit == "g") scale = 0x1p30;
    else if (unit == "T" || unit == "t") scale = 0x1p40;
    else if (!unit.empty()) throw std::invalid_argument("size '" + text + "': unknown unit '" + unit + "'");
    // Checked as a double, before the cast: a cast of NaN or of 1e30 is undefined.
    const double bytes = v * scale;
    if (!(bytes >= 1 && bytes <= 0x1p62)) throw std::invalid_argument("size '" + text + "' must be 1 byte to 2^62 bytes");
    return static_cast<std::uint64_t>(bytes);
}

std::string format_bytes(std::uint64_t bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        ++u;
    }
    char text[32];
    std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return text;
}

std::optional<long long> parse_whole(const std::string& text, long long lo, long long hi) {
    try {
        std::size_t used = 0;
        const long long v = std::stoll(text, &used);
        if (used == text.size() && v >= lo && v <= hi) return v;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

namespace {

std::optional<IndexRange> range_of(const std::string& item, int max) {
    const auto dash = item.find('-');
    const auto first = parse_whole(item.substr(0, dash), 0, max);
    const auto last = dash == std::string::npos ? first : parse_whole(item.substr(dash + 1), 0, max);
    if (!first || !last || *last < *first) return std::nullopt;
    return IndexRange{static_cast<int>(*first), static_cast<int>(*last)};
}

}  // namespace

IndexRange parse_index_range(const std::string& text, int max, const std::string& what) {
    if (const auto r = range_of(text, max)) return *r;
    throw std::invalid_argument(what + " '" + text + "': expected N or LO-HI, numbers 0 to " + std::to_string(max));
}

std::vector<IndexRange> parse_index_ranges(const std::string& text, int max, const std::string& what) {
    std::vector<IndexRange> ranges;
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(pos, end - pos);
        const auto r = range_of(item, max);
        if (!r)
            throw std::invalid_argument(what + " '" + text + "': bad item '" + item + "' (numbers 0 to " +
                                        std::to_string(max) + ", or ranges LO-HI of them)");
        ranges.push_back(*r);
        pos = end + 1;
    }
    if (ranges.empty()) throw std::invalid_argument(what + " '" + text + "' is empty");
    return ranges;
}

std::vector<int> parse_index_list(const std::string& text, int max, const std::string& what) {
    std::vector<int> out;
    for (const IndexRange& r : parse_index_ranges(text, max, what))
        for (int i = r.first; i <= r.last; ++i) out.push_back(i);
    return out;
}

}  // namespace slabcast
