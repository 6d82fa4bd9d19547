#include "base/status_reporter.h"

#include "base/stop_signal.h"

#include "slabcast/clock.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace slabcast {

namespace {
double unix_time() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}
}  // namespace

double RateMeter::gbit_per_s(std::uint64_t total_bytes) {
    const std::int64_t now = monotonic_ns();
    const double gbps = last_ns_ < 0 || now == last_ns_
                            ? 0.0
                            : static_cast<double>(total_bytes - last_bytes_) * 8 / static_cast<double>(now - last_ns_);
    last_bytes_ = total_bytes;
    last_ns_ = now;
    return gbps;
}

StatusReporter::StatusReporter(std::string role, const std::string& stats_json_path) : role_(std::move(role)) {
    if (!stats_json_path.empty()) {
        json_ = std::fopen(stats_json_path.c_str(), "a");
        if (!json_) throw std::runtime_error(stats_json_path + ": cannot open for appending: " + std::strerror(errno));
    }
}

StatusReporter::~StatusReporter() {
    stop();
    if (json_) std::fclose(json_);
}

void StatusReporter::start(Snapshot snapshot, int period_ms) {
    snapshot_ = std::move(snapshot);
    running_ = true;
    thread_ = std::thread([this, period_ms] {
        auto next = std::chrono::steady_clock::now();
        while (running_) {
            next += std::chrono::milliseconds(period_ms);
            // Sleep in small slices so stop() returns quickly.
            while (running_ && std::chrono::steady_clock::now() < next)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            if (running_) report();
        }
    });
}

void StatusReporter::stop() {
    if (!running_) return;
    running_ = false;
    if (thread_.joinable()) thread_.join();
    report();  // the final figures
}

void StatusReporter::report() {
    nlohmann::json j = snapshot_();
    spdlog::info("{}", j.value("line", std::string()));
    j["kind"] = "status";
    write_json(std::move(j));
}

void StatusReporter::event(nlohmann::json fields) { write_json(std::move(fields)); }

void StatusReporter::write_json(nlohmann::json j) {
    if (!json_) return;
    j["role"] = role_;
    j["time"] = unix_time();
    const std::string text = j.dump() + "\n";
    std::lock_guard<std::mutex> lock(mutex_);
    std::fputs(text.c_str(), json_);
    std::fflush(json_);
}

}  // namespace slabcast
