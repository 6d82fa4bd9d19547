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
// `durable`: the file's data is synced before it takes the name (the caller
// syncs the directory for the name itself).
void write_atomically(const std::string& path, const std::string& text, bool durable = false);

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

// A vector of whole numbers (each element checked by whole_number).
template <typename T>
struct is_whole_vector : std::false_type {};
template <typename T>
struct is_whole_vector<std::vector<T>> : std::bool_constant<std::is_integral_v<T> && !std::is_same_v<T, bool>> {};

}  // namespace detail

// Field `key` of object `j`, of type T, checked: "<path>: missing field
// 'KEY'", "<path>: field 'KEY' has the wrong type" (or "must be a whole number",
// "is out of range"). `path` names the file, and where in it when that helps
// ("plan.json: senders s1"). A whole number is checked to fit T, a vector of
// them each element; a floating-point T takes only a number (nlohmann's get
// would turn true into 1.0).
template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& path) {
    if (!j.is_object() || !j.contains(key)) throw std::runtime_error(path + ": missing field '" + key + "'");
    const nlohmann::json& v = j.at(key);
    const std::string what = path + ": field '" + std::string(key) + "'";
    if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number()) throw std::runtime_error(what + " has the wrong type");
        return v.get<T>();
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return whole_number<T>(v, what);
    } else if constexpr (detail::is_whole_vector<T>::value) {
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

// An optional field: `fallback` when `j` has no `key`, else as field().
template <typename T>
T field_or(const nlohmann::json& j, const char* key, T fallback, const std::string& path) {
    if (!j.is_object() || !j.contains(key)) return fallback;
    return field<T>(j, key, path);
}

}  // namespace slabcast::json_file
