// The sender behind the C API: one stream of a simulation's slab, sent with
// the shuffler's SlabSender, either in the caller's thread or from a bounded
// queue by a thread of its own (the caller's choice of what a full queue does:
// wait, or drop the oldest step not yet being sent).
#pragma once

#include "slabcast/slabcast.h"
#include "shuffle/slab_sender.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace slabcast::library {

// A bad option or argument (SLABCAST_ERROR_ARGUMENT), and the others by code.
struct Error : std::runtime_error {
    Error(int code_, const std::string& what) : std::runtime_error(what), code(code_) {}
    int code;
};

class Sender {
public:
    explicit Sender(const slabcast_options& o);  // throws Error
    ~Sender();                                   // flushes, then stops the thread
    Sender(const Sender&) = delete;
    Sender& operator=(const Sender&) = delete;

    void send_step(std::int32_t step, const float* values);
    void flush();
    slabcast_stats stats() const;

private:
    struct Queued {
        std::int32_t step;
        std::size_t buffer;
    };
    void send_now(std::int32_t step, const float* values);
    void run_queue();
    void throw_if_failed();

    std::int64_t values_a_step_ = 0;
    SlabSender sender_;
    // The queue: `buffers_` steps of room; `free_` holds the buffers no step is in.
    int queue_steps_ = 0;
    slabcast_queue_policy policy_ = SLABCAST_QUEUE_BLOCK;
    std::vector<std::vector<float>> buffers_;
    std::vector<std::size_t> free_;
    // Steps waiting to be sent, oldest first: a ring of queue_steps_ entries
    // made once (each holds a buffer of its own, so it never overflows).
    std::vector<Queued> waiting_;
    std::size_t waiting_first_ = 0, waiting_count_ = 0;
    bool nothing_waiting() const { return waiting_count_ == 0; }
    Queued take_oldest();
    void add_newest(Queued q);
    bool sending_ = false, closing_ = false;
    std::exception_ptr failure_;  // the sending thread's, raised to the caller
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::thread thread_;
    std::atomic<std::uint64_t> steps_sent_{0}, steps_dropped_{0}, packets_{0}, bytes_{0};
    std::atomic<std::int64_t> send_ns_{0};
};

}  // namespace slabcast::library
