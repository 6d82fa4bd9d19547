// Small helpers for the JSON files slabcast reads: whole-file read and typed
// field access whose errors name the file and the field.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace slabcast::json_file {

// Throws std::runtime_error("<path>: <problem>") when missing, unreadable or not JSON.
nlohmann::json parse(const std::string& text, const std::string& path);
std::string read_text(const std::string& path);
void write_atomically(const std::string& path, const std::string& text);

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& path) {
    if (!j.is_object() || !j.contains(key)) throw std::runtime_error(path + ": missing field '" + key + "'");
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
        throw std::runtime_error(path + ": field '" + std::string(key) + "' has the wrong type");
    }
}

}  // namespace slabcast::json_file
