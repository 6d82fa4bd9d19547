#include "mover/early_streams.h"

#include "mover/stream_io.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace slabcast::mover {

EarlyStreams::EarlyStreams(const std::string& host, int port, int n, int peer_timeout_s)
    : shared_(std::make_shared<Shared>()) {
    shared_->slots.resize(static_cast<std::size_t>(std::max(n, 0)));
    if (n > 0) std::thread(open, shared_, host, port, peer_timeout_s, 0).detach();
}

void EarlyStreams::open(std::shared_ptr<Shared> shared, std::string host, int port, int peer_timeout_s, int index) {
    // Declared first, destroyed last: a descriptor closes only once it is out
    // of `waiting`, so that stop() never shuts down a number reused meanwhile.
    UniqueFd connected;
    std::optional<EarlyStream> stream;
    std::exception_ptr error;
    int fd = -1;  // in `waiting`
    bool others_started = index != 0;
    const auto start_others = [&] {
        for (std::size_t i = 1; i < shared->slots.size(); ++i)
            std::thread(open, shared, host, port, peer_timeout_s, static_cast<int>(i)).detach();
        others_started = true;
    };
    try {
        connected = connect_tcp(host, port, peer_timeout_s);
        if (!shared->waiting.add(connected.get())) throw std::runtime_error("the transfer stopped");
        fd = connected.get();
        if (!others_started) start_others();
        Challenge c = read_challenge(fd, peer_timeout_s);
        stream = EarlyStream{std::move(connected), c};
    } catch (...) {
        error = std::current_exception();
    }
    if (!others_started) start_others();  // stream 0 failed: each of the others finds out for itself
    if (fd >= 0) shared->waiting.remove(fd);
    std::lock_guard lock(shared->mutex);
    Slot& slot = shared->slots[index];
    slot.done = true;
    if (!shared->abandoned) {  // else its descriptor closes here
        slot.stream = std::move(stream);
        slot.error = error;
    }
    shared->changed.notify_all();
}

EarlyStreams::~EarlyStreams() {
    stop();
    std::lock_guard lock(shared_->mutex);
    shared_->abandoned = true;
    for (Slot& s : shared_->slots) s.stream.reset();
}

void EarlyStreams::stop() { shared_->waiting.stop(); }

std::optional<EarlyStream> EarlyStreams::take(int index) {
    std::unique_lock lock(shared_->mutex);
    if (index < 0 || static_cast<std::size_t>(index) >= shared_->slots.size()) return std::nullopt;
    Slot& slot = shared_->slots[index];
    shared_->changed.wait(lock, [&] { return slot.done; });
    if (slot.taken) return std::nullopt;
    slot.taken = true;
    if (slot.error) std::rethrow_exception(slot.error);
    std::optional<EarlyStream> s = std::move(slot.stream);
    slot.stream.reset();
    const std::uint64_t wait_ms = std::min(s->challenge.frame.offset, kMaxHelloWaitMs);
    const auto age = std::chrono::steady_clock::now() - s->challenge.read_at;
    if (wait_ms != 0 && age > std::chrono::milliseconds(wait_ms / 2)) return std::nullopt;  // closed here
    return s;
}

}  // namespace slabcast::mover
