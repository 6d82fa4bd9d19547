// The once-a-second status every role prints (rate, packets, loss, step), and
// the same figures appended as JSON lines to --stats-json FILE, along with the
// role's events (a step finished, abandoned, staged, ...).
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace slabcast {

// Gbit/s of a growing byte counter between two successive calls.
class RateMeter {
public:
    double gbit_per_s(std::uint64_t total_bytes);

private:
    std::uint64_t last_bytes_ = 0;
    std::int64_t last_ns_ = -1;
};

class StatusReporter {
public:
    // `snapshot` returns {"line": "...", ...fields}; "line" is printed, the rest
    // (with role, time and the line itself) goes to the JSON file.
    using Snapshot = std::function<nlohmann::json()>;

    StatusReporter(std::string role, const std::string& stats_json_path);
    ~StatusReporter();
    StatusReporter(const StatusReporter&) = delete;
    StatusReporter& operator=(const StatusReporter&) = delete;

    void start(Snapshot snapshot, int period_ms = 1000);
    // Stops the periodic thread after one final report.
    void stop();
    // Appends an event line to the JSON file (thread-safe).
    void event(nlohmann::json fields);
    // Whether events are written anywhere: a hot path builds none otherwise.
    bool recording() const { return json_ != nullptr; }

private:
    void write_json(nlohmann::json j);
    void report();

    std::string role_;
    std::FILE* json_ = nullptr;
    std::mutex mutex_;
    Snapshot snapshot_;
    std::thread thread_;
    std::atomic<bool> running_{false};
};

}  // namespace slabcast
