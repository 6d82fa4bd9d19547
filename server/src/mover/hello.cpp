#include "mover/hello.h"

#include "mover/manifest.h"
#include "mover/peer_text.h"
#include "slabcast/json_file.h"

#include <stdexcept>

namespace slabcast::mover {

Hello parse_hello(std::uint64_t transfer, const std::string& text) {
    nlohmann::json j;
    try {
        j = parse_peer_json(text);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string("the Hello is malformed: ") + e.what());
    }
    Hello h;
    h.transfer = transfer;
    h.stream = json_file::field<int>(j, "stream", "the Hello");
    if (h.stream < 0 || h.stream > 127)
        throw std::runtime_error("the Hello names stream " + std::to_string(h.stream) + " (0..127)");
    if (j.contains("get")) {
        const auto& wanted = j.at("get");
        if (!wanted.is_array() || wanted.empty() || wanted.size() > kMaxPullPaths)
            throw std::runtime_error("a pull must name 1.." + std::to_string(kMaxPullPaths) + " paths");
        for (const auto& w : wanted) {
            // Its type only: the value itself is the peer's, and may be 64 KiB.
            if (!w.is_string()) throw std::runtime_error(std::string("a pull asks for a JSON ") + w.type_name() + ", not a path");
            h.get.push_back(w.get<std::string>());
            check_relative_path(h.get.back());
        }
    } else if (j.contains("dest")) {
        h.dest = json_file::field<std::string>(j, "dest", "the Hello");
        while (!h.dest.empty() && h.dest.back() == '/') h.dest.pop_back();
        if (h.dest == ".") h.dest.clear();
        if (!h.dest.empty()) check_relative_path(h.dest);
    }
    return h;
}

}  // namespace slabcast::mover
