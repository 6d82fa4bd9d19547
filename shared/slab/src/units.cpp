#include "slabcast/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace slabcast {

double parse_rate_bps(const std::string& text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        throw std::invalid_argument("rate '" + text + "': expected a number such as 2.81G");
    }
    std::string unit = text.substr(used);
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

}  // namespace slabcast
