#include "sender.h"

#include "slabcast/clock.h"
#include "slabcast/run_codec.h"
#include "slabcast/units.h"
#include "slabcast/volume.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace slabcast::library {
namespace {

constexpr int kMostQueuedSteps = 64;

std::string text_or(const char* text, const char* otherwise) { return text ? text : otherwise; }

// Every option checked before it sizes or indexes anything; the planes a
// sender owns must be exactly one slab of the receiver's layout.
SlabSenderOptions checked(const slabcast_options& o, std::int64_t& values_a_step) {
    const Dims dims{o.dims[0], o.dims[1], o.dims[2]};
    static const char* const names[] = {"nx", "ny", "nz"};
    for (int axis = 0; axis < 3; ++axis)
        if (o.dims[axis] < 1 || o.dims[axis] > kMaxAxis)
            throw Error(SLABCAST_ERROR_ARGUMENT, fmt::format("dims: {} is {}; each of nx, ny, nz must be 1..{}",
                                                             names[axis], o.dims[axis], kMaxAxis));
    if (o.z_begin < 0 || o.z_end > dims.nz || o.z_begin >= o.z_end)
        throw Error(SLABCAST_ERROR_ARGUMENT,
                    fmt::format("z range [{}, {}) is not a non-empty range of the volume's planes 0..{}", o.z_begin,
                                o.z_end, dims.nz - 1));
    const std::int64_t depth = o.slab_depth == 0 ? o.z_end - o.z_begin : o.slab_depth;
    if (depth < 1 || depth > kMaxAxis)
        throw Error(SLABCAST_ERROR_ARGUMENT, fmt::format("slab_depth {}: expected 1..{}", o.slab_depth, kMaxAxis));
    if (o.z_begin % depth != 0 || o.z_end != std::min(o.z_begin + depth, dims.nz))
        throw Error(SLABCAST_ERROR_ARGUMENT,
                    fmt::format("z range [{}, {}) is not one slab of depth {} (slab k holds planes [k*{}, "
                                "min((k+1)*{}, {})))",
                                o.z_begin, o.z_end, depth, depth, depth, dims.nz));
    if (!o.destination || !*o.destination)
        throw Error(SLABCAST_ERROR_ARGUMENT, "destination: expected HOST:PORT of the receiver's stream");
    if (o.queue_steps < 0 || o.queue_steps > kMostQueuedSteps)
        throw Error(SLABCAST_ERROR_ARGUMENT, fmt::format("queue_steps {}: expected 0..{}", o.queue_steps, kMostQueuedSteps));
    if (o.queue_policy != SLABCAST_QUEUE_BLOCK && o.queue_policy != SLABCAST_QUEUE_DROP_OLDEST)
        throw Error(SLABCAST_ERROR_ARGUMENT, fmt::format("queue_policy {}: expected block (0) or drop oldest (1)",
                                                         static_cast<int>(o.queue_policy)));
    if (o.encode_threads < 0 || o.encode_threads > ParallelPacker::kMostThreads)
        throw Error(SLABCAST_ERROR_ARGUMENT, fmt::format("encode_threads {}: expected 0..{}", o.encode_threads,
                                                         ParallelPacker::kMostThreads));
    SlabSenderOptions s;
    try {
        s.dims = dims;
        // The owned planes only: the slab's ghost plane belongs to the rank
        // below, and a receiver holding both slabs copies it across
        // (docs/wire-format.md, "Ghost plane").
        s.z_begin = o.z_begin;
        s.z_end = o.z_end;
        s.slab = static_cast<std::int32_t>(o.z_begin / depth);
        s.order = parse_send_order(text_or(o.order, "scan"));
        s.wire = parse_wire_format(text_or(o.wire, "run"));
        s.codec = run::parse_codec(text_or(o.codec, "none"));
        s.rate_bps = parse_rate_bps(text_or(o.rate, "2.81G"));
        s.bind = text_or(o.bind, "");
        s.to = o.destination;
        s.encode_threads = std::max(1, o.encode_threads);
        s.fec = fec::parse_choice(text_or(o.fec, "none"));
        s.who = fmt::format("slabcast sender (slab {})", s.slab);
        if (s.codec.codec != run::Codec::None && s.wire != WireFormat::Run)
            throw std::invalid_argument("codec " + run::to_string(s.codec) + " needs wire \"run\"");
    } catch (const std::invalid_argument& e) {
        throw Error(SLABCAST_ERROR_ARGUMENT, e.what());
    }
    values_a_step = dims.plane() * (o.z_end - o.z_begin);
    return s;
}

SlabSender open_sender(const SlabSenderOptions& s) {
    try {
        return SlabSender(s);
    } catch (const std::invalid_argument& e) {
        // A name that does not resolve is the network's answer; a malformed
        // address or port 0 is the caller's.
        const bool unresolved = std::strstr(e.what(), "cannot resolve") != nullptr;
        throw Error(unresolved ? SLABCAST_ERROR_NETWORK : SLABCAST_ERROR_ARGUMENT,
                    fmt::format("destination '{}': {}", s.to, e.what()));
    } catch (const std::runtime_error& e) {
        throw Error(SLABCAST_ERROR_NETWORK, e.what());
    }
}

}  // namespace

Sender::Sender(const slabcast_options& o)
    : sender_(open_sender(checked(o, values_a_step_))), queue_steps_(o.queue_steps), policy_(o.queue_policy) {
    if (queue_steps_ == 0) return;
    try {
        for (int i = 0; i < queue_steps_; ++i) {
            buffers_.emplace_back(static_cast<std::size_t>(values_a_step_));
            free_.push_back(static_cast<std::size_t>(i));
        }
        waiting_.resize(static_cast<std::size_t>(queue_steps_));
    } catch (const std::bad_alloc&) {
        throw Error(SLABCAST_ERROR_MEMORY, fmt::format("cannot allocate {} queue buffers of {} MiB", queue_steps_,
                                                       values_a_step_ * 4 >> 20));
    }
    thread_ = std::thread([this] { run_queue(); });
}

Sender::~Sender() {
    if (!thread_.joinable()) return;
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return (nothing_waiting() && !sending_) || failure_; });
        closing_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void Sender::send_now(std::int32_t step, const float* values) {
    const std::int64_t started = monotonic_ns();
    sender_.begin_step(step, values);
    while (sender_.send_batch([] { return false; }, [] {})) {
    }
    packets_ += sender_.packets_in_step();
    bytes_ += sender_.bytes_in_step();
    ++steps_sent_;
    send_ns_ += monotonic_ns() - started;
}

void Sender::throw_if_failed() {
    if (failure_) std::rethrow_exception(failure_);
}

void Sender::send_step(std::int32_t step, const float* values) {
    if (step < 0) throw Error(SLABCAST_ERROR_ARGUMENT, fmt::format("step {}: expected >= 0", step));
    if (!values) throw Error(SLABCAST_ERROR_ARGUMENT, "values: NULL");
    if (queue_steps_ == 0) {
        try {
            send_now(step, values);
        } catch (const std::runtime_error& e) {
            throw Error(SLABCAST_ERROR_NETWORK, e.what());
        }
        return;
    }
    std::unique_lock lock(mutex_);
    throw_if_failed();
    if (free_.empty() && policy_ == SLABCAST_QUEUE_DROP_OLDEST && !nothing_waiting()) {
        free_.push_back(take_oldest().buffer);  // the oldest step not yet being sent
        ++steps_dropped_;
    }
    changed_.wait(lock, [&] { return !free_.empty() || failure_; });
    throw_if_failed();
    const std::size_t buffer = free_.back();
    free_.pop_back();
    lock.unlock();
    // The copy outside the lock: the sending thread goes on meanwhile.
    std::memcpy(buffers_[buffer].data(), values, static_cast<std::size_t>(values_a_step_) * sizeof(float));
    lock.lock();
    add_newest(Queued{step, buffer});
    changed_.notify_all();
}

Sender::Queued Sender::take_oldest() {
    const Queued q = waiting_[waiting_first_];
    waiting_first_ = (waiting_first_ + 1) % waiting_.size();
    --waiting_count_;
    return q;
}

void Sender::add_newest(Queued q) {
    waiting_[(waiting_first_ + waiting_count_) % waiting_.size()] = q;
    ++waiting_count_;
}

void Sender::run_queue() {
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&] { return !nothing_waiting() || closing_; });
        if (nothing_waiting()) return;  // closing, and everything sent
        const Queued next = take_oldest();
        sending_ = true;
        lock.unlock();
        try {
            send_now(next.step, buffers_[next.buffer].data());
        } catch (const std::exception& e) {
            lock.lock();
            failure_ = std::make_exception_ptr(Error(SLABCAST_ERROR_NETWORK, e.what()));
            sending_ = false;
            changed_.notify_all();
            return;
        }
        lock.lock();
        sending_ = false;
        free_.push_back(next.buffer);
        changed_.notify_all();
    }
}

void Sender::flush() {
    if (queue_steps_ == 0) return;
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return (nothing_waiting() && !sending_) || failure_; });
    throw_if_failed();
}

slabcast_stats Sender::stats() const {
    slabcast_stats s{};
    s.steps_sent = steps_sent_;
    s.steps_dropped = steps_dropped_;
    s.packets = packets_;
    s.bytes = bytes_;
    s.packets_a_step = sender_.total_packets();
    s.send_seconds = static_cast<double>(send_ns_.load()) * 1e-9;
    return s;
}

}  // namespace slabcast::library
