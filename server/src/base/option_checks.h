// Range checks for the roles' numeric command-line options, so that a number
// is refused with its range before anything is sized, shifted or multiplied
// by it (`--rcvbuf-mb 4096` once shifted into an int's sign bit). Whole
// numbers use CLI::Range ("--rcvbuf-mb: Value 4096 not in range 1 to 1024");
// seconds and other fractional numbers use seconds_range below, which also
// refuses NaN and infinity (CLI::Range lets NaN through and prints its
// bounds as 0.000000).
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

namespace slabcast {

inline CLI::Validator seconds_range(double lo, double hi) {
    const std::string range = CLI::detail::to_string(lo) + " to " + CLI::detail::to_string(hi);
    return CLI::Validator(
        [lo, hi, range](std::string& input) {
            double v = 0;
            if (!CLI::detail::lexical_cast(input, v) || !std::isfinite(v) || v < lo || v > hi)
                return "Value " + input + " not in range " + range + " (seconds)";
            return std::string();
        },
        "SECONDS in [" + range + "]");
}

// Names checked by the function that reads them (parse_send_order,
// parse_fill_rule: it throws std::invalid_argument naming what is wrong), so
// that each list of names is written once: "--fill: fill 'zero': expected
// previous or nearest".
template <class Parse>
CLI::Validator parsed_by(Parse parse, const std::string& what) {
    return CLI::Validator(
        [parse](std::string& input) {
            try {
                parse(input);
                return std::string();
            } catch (const std::invalid_argument& e) {
                return std::string(e.what());
            }
        },
        what);
}

}  // namespace slabcast
