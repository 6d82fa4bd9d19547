// The stager's work (`slabcast stage`): keeps the staging area (in /dev/shm)
// filled with the next steps the controller will ask for, as many as the
// memory budget allows, and frees a step once every local shuffler has marked
// it done or the controller has moved past it (Balman et al., 2012, section
// 4.2). Local steps go into a ring of staging slots allocated once
// (StagingRing); a step whose slot still holds it from an earlier lap is staged
// again without a copy.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace slabcast {

class StatusReporter;

struct StageOptions {
    std::string key_file;    // authenticates syncs (empty: unauthenticated, with a warning)
    std::string controller;  // addresses syncs may come from (empty: any)
    std::string dataset;
    std::string from;  // HOST[:PORT] of a `slabcast serve --allow-pull`: --dataset is beneath its root
    int pull_streams = 4;
    std::string staging;
    std::string budget;
    std::string streams;  // stream ids whose shufflers share this staging area
    std::string sync;
    bool loop = false;
    std::string stats_json;
};

struct StageCounters {
    std::atomic<std::uint64_t> bytes_read{0};
    std::atomic<std::int64_t> read_ns{0};
    std::atomic<int> staged{0};
    std::atomic<long> steps_staged{0}, steps_reused{0}, steps_freed{0}, steps_skipped{0};
    std::atomic<std::int64_t> cursor_step{-1};
};

class Stager {
public:
    // Checks the options, the dataset and the staging area; throws naming the problem.
    Stager(const StageOptions& o, StatusReporter& status);
    ~Stager();
    Stager(const Stager&) = delete;
    Stager& operator=(const Stager&) = delete;

    StageCounters& counters();
    // Stages until a stop is requested, then leaves nothing behind.
    void run();

private:
    class Window;
    std::unique_ptr<Window> window_;
};

}  // namespace slabcast
