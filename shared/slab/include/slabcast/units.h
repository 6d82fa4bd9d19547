// Numbers as people type them and read them: rates ("2.81G" = 2.81e9 bit/s of
// UDP payload), byte sizes ("8G" = 8 GiB), whole numbers and lists of indices
// ("0-3,8"). Every role parses and prints them here, so "2.81G" or "0-3" means
// the same on every command line and in every deployment file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slabcast {

// "2.81G", "500M", "10g", "1.5Gbit", "0" (unlimited). Decimal prefixes k/M/G/T.
// Throws std::invalid_argument naming the text.
double parse_rate_bps(const std::string& text);
std::string format_rate(double bits_per_second);  // "2.81 Gbit/s"

// "8G", "512M", "1.5g", "64k", "4096": bytes, with binary prefixes K/M/G/T
// (either case, 2^10 to 2^40), 1 byte to 2^62 bytes. Throws
// std::invalid_argument naming the text.
std::uint64_t parse_bytes(const std::string& text);
// "512 bytes", "1.5 MiB", "5.0 GiB": a size for messages and progress.
std::string format_bytes(std::uint64_t bytes);

// The whole number `text` spells (all of it: "3x" is not 3), when it lies in
// lo..hi; nullopt otherwise.
std::optional<long long> parse_whole(const std::string& text, long long lo, long long hi);

// "N" or "LO-HI", each 0..max: an inclusive range of indices.
struct IndexRange {
    int first = 0;
    int last = 0;
};
// Throws std::invalid_argument("WHAT 'TEXT': expected N or LO-HI, numbers 0 to MAX").
IndexRange parse_index_range(const std::string& text, int max, const std::string& what);
// "0,2,4-7" -> its ranges in the order written; throws std::invalid_argument
// naming `what`, the text and the bad item ("numbers 0 to MAX, or ranges
// LO-HI of them"), or saying the list is empty.
std::vector<IndexRange> parse_index_ranges(const std::string& text, int max, const std::string& what);
// The same list, every index spelled out: "0,2,4-7" -> {0,2,4,5,6,7}. `max`
// is what the indices count: CPUs (CPU_SETSIZE - 1), streams (one per slab:
// below kMaxAxis).
std::vector<int> parse_index_list(const std::string& text, int max, const std::string& what);

}  // namespace slabcast
