// A thin C++ wrapper of the C API (slabcast.h): a move-only owner of a sender
// whose failures are exceptions (slabcast::Error, with the C status code).
//
//     slabcast::Options o;
//     o.dims[0] = o.dims[1] = o.dims[2] = 256;
//     std::tie(o.z_begin, o.z_end, o.slab_depth) = slabcast::rank_slab(256, rank, size);
//     o.destination = "render1:9000";
//     slabcast::Sender sender(o);
//     sender.send_step(step, my_planes.data());
#ifndef SLABCAST_SLABCAST_HPP
#define SLABCAST_SLABCAST_HPP

#include "slabcast/slabcast.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace slabcast {

class Error : public std::runtime_error {
public:
    Error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
    int code() const { return code_; }

private:
    int code_;
};

inline void check(int status) {
    if (status != SLABCAST_OK) throw Error(status, slabcast_last_error());
}

struct Options : slabcast_options {
    Options() { slabcast_options_init(this); }
};

// (z_begin, z_end, slab_depth) of rank `rank` of `size`.
inline std::tuple<std::int64_t, std::int64_t, std::int64_t> rank_slab(std::int64_t nz, int rank, int size) {
    std::int64_t b = 0, e = 0, d = 0;
    check(slabcast_rank_slab(nz, rank, size, &b, &e, &d));
    return {b, e, d};
}

class Sender {
public:
    explicit Sender(const slabcast_options& options) { check(slabcast_open(&options, &sender_)); }
    Sender(Sender&& other) noexcept : sender_(std::exchange(other.sender_, nullptr)) {}
    Sender& operator=(Sender&& other) noexcept {
        std::swap(sender_, other.sender_);
        return *this;
    }
    Sender(const Sender&) = delete;
    Sender& operator=(const Sender&) = delete;
    // Flushes what is queued; a failure then cannot be thrown: call close() to see it.
    ~Sender() { slabcast_close(sender_); }

    void send_step(std::int32_t step, const float* values) { check(slabcast_send_step(sender_, step, values)); }
    void flush() { check(slabcast_flush(sender_)); }
    slabcast_stats stats() const {
        slabcast_stats s{};
        check(slabcast_get_stats(sender_, &s));
        return s;
    }
    void close() { check(slabcast_close(std::exchange(sender_, nullptr))); }

private:
    slabcast_sender* sender_ = nullptr;
};

}  // namespace slabcast

#endif
