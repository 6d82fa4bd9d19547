#include "demo/demo_logs.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace slabcast {

std::string last_line(const std::string& path, const std::string& containing) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line))
        if (line.find(containing) != std::string::npos) last = line;
    return last;
}

std::size_t streams_reporting_a_step(const std::string& path) {
    std::ifstream in(path);
    std::set<long> streams;
    for (std::string line; std::getline(in, line);) {
        if (line.find("\"kind\":\"step") == std::string::npos) continue;  // "step" or "step_dropped"
        // A line the receiver is still writing does not parse yet: skipped.
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.is_object() && j.contains("stream") && j["stream"].is_number_integer())
            streams.insert(j["stream"].get<long>());
    }
    return streams.size();
}

}  // namespace slabcast
