// Numbers as people type them and read them: rates ("2.81G" = 2.81e9 bit/s of
// UDP payload). Every role parses and prints them here, so "2.81G" means the
// same on every command line.
#pragma once

#include <string>

namespace slabcast {

// "2.81G", "500M", "10g", "1.5Gbit", "0" (unlimited). Decimal prefixes k/M/G/T.
// Throws std::invalid_argument naming the text.
double parse_rate_bps(const std::string& text);
std::string format_rate(double bits_per_second);  // "2.81 Gbit/s"

}  // namespace slabcast
