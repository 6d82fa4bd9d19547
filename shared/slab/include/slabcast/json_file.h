// Small helpers for the JSON slabcast reads (its files, and the data mover's
// messages from the network): whole-file read and typed
// field access whose errors name the file and the field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace slabcast::json_file {

// The most a JSON file slabcast reads may hold: a descriptor or a plan is a
// few KiB, a dataset of a million steps some 50 MiB.
constexpr std::uint64_t kMaxTextBytes = std::uint64_t{64} << 20;

// Throws std::runtime_error("<path>: <problem>") when missing, unreadable or not JSON.
nlohmann::json parse(const std::string& text, const std::string& path);
// Also refuses anything but a regular file (a FIFO would hang the reader) and
// a file larger than kMaxTextBytes.
std::string read_text(const std::string& path);
void write_atomically(const std::string& path, const std::string& text);

// A whole number that fits T, or std::runtime_error("<what> must be a whole
// number" / "is out of range"). nlohmann's get<int>() would convert 1e300 or
// 2^40 by a C++ cast, which is undefined for floats out of range (found by
// fuzz_descriptor and fuzz_manifest; testing/fuzz/regressions/).
template <typename T>
T whole_number(const nlohmann::json& v, const std::string& what) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    if (!v.is_number_integer()) throw std::runtime_error(what + " must be a whole number");
    bool fits = false;
    if (v.is_number_unsigned()) {
        fits = v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    } else {
        const auto i = v.get<std::int64_t>();
        if constexpr (std::is_unsigned_v<T>)
            fits = i >= 0 && static_cast<std::uint64_t>(i) <= std::numeric_limits<T>::max();
        else
            fits = i >= std::numeric_limits<T>::min() && i <= std::numeric_limits<T>::max();
    }
    if (!fits) throw std::runtime_error(what + " is out of range");
    return v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>()) : static_cast<T>(v.get<std::int64_t>());
}

namespace detail {

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};

}  // namespace detail

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& path) {
    if (!j.is_object() || !j.contains(key)) throw std::runtime_error(path + ": missing field '" + key + "'");
    const nlohmann::json& v = j.at(key);
    const std::string what = path + ": field '" + std::string(key) + "'";
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return whole_number<T>(v, what);
    } else if constexpr (detail::is_vector<T>::value && std::is_integral_v<typename T::value_type>) {
        if (!v.is_array()) throw std::runtime_error(what + " has the wrong type");
        T out;
        for (const auto& e : v) out.push_back(whole_number<typename T::value_type>(e, what));
        return out;
    } else {
        try {
            return v.get<T>();
        } catch (const nlohmann::json::exception&) {
            throw std::runtime_error(what + " has the wrong type");
        }
    }
}

}  // namespace slabcast::json_file
