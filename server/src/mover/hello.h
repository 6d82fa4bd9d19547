// What a stream asks `slabcast serve` for in its Hello (docs/mover.md), read
// from the JSON after the handshake's nonce and MAC (auth.h): any client that
// reaches the port sends it, so every field is checked by name and type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace slabcast::mover {

// A Hello's payload (after the nonce and MAC) is small JSON; a pull's list
// of paths is the largest part of it.
inline constexpr std::uint32_t kMaxHelloBytes = 64u << 10;
inline constexpr std::size_t kMaxPullPaths = 1024;

struct Hello {
    std::uint64_t transfer = 0;
    int stream = 0;
    std::string dest;              // a transfer in: where beneath --root ("" for the root itself)
    std::vector<std::string> get;  // a pull: the paths asked for (none for a transfer in)
};

// The Hello of transfer `transfer` whose JSON is `json`. Throws
// std::runtime_error naming the field, in slabcast's words (no peer bytes
// but as printable text: peer_text.h).
Hello parse_hello(std::uint64_t transfer, const std::string& json);

}  // namespace slabcast::mover
