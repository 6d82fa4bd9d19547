// Text that came from the other end of a mover stream (an Error's message, a
// reason a file failed, a path it named, its JSON), made safe before this end
// prints or logs it: a peer must not be able to write terminal escapes into
// the operator's terminal or forge lines in the log, nor flood either.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace slabcast::mover {

// A peer's text is shown at most this long.
inline constexpr std::size_t kMaxPeerText = 4096;

// `text` cut to kMaxPeerText bytes, every control character (below 0x20, a
// newline and a tab included, and 0x7f) replaced by '?'.
std::string printable(std::string_view text);

// JSON a peer sent. Throws std::runtime_error("not JSON (N bytes, malformed
// at byte K)"), never the JSON library's own message, which quotes the
// peer's bytes; the caller says whose JSON it was.
nlohmann::json parse_peer_json(const std::string& text);

}  // namespace slabcast::mover
