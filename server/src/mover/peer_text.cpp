#include "mover/peer_text.h"

#include <algorithm>
#include <stdexcept>

namespace slabcast::mover {

std::string printable(std::string_view text) {
    std::string out(text.substr(0, std::min(text.size(), kMaxPeerText)));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return out;
}

nlohmann::json parse_peer_json(const std::string& text) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw std::runtime_error("not JSON (" + std::to_string(text.size()) + " bytes, malformed at byte " +
                                 std::to_string(e.byte) + ")");
    } catch (const nlohmann::json::exception&) {  // out_of_range: a number no double holds
        throw std::runtime_error("not JSON that can be read (" + std::to_string(text.size()) +
                                 " bytes, a number out of range)");
    }
}

}  // namespace slabcast::mover
