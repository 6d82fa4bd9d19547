// Connections to `slabcast serve` that have not said Hello yet (docs/mover.md,
// "Limits"). They are held in the accept loop's poll set, without a thread
// each: their first frame is read as its bytes come, and each has a deadline
// (--hello-timeout). So a flood of connections that never say Hello costs a
// descriptor and a few bytes each, never a thread, up to --max-waiting; past
// that the oldest connection of the address that holds the most is closed,
// so a flood from one address does not push out a client from another.
// A thread is started only for a connection whose Hello is whole (and, in
// serve, valid).
#pragma once

#include "mover/wire.h"
#include "slabcast/unique_fd.h"

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

namespace slabcast::mover {

// A connection whose first frame, a Hello, has arrived whole.
struct Arrival {
    UniqueFd fd;
    std::string from;      // the peer's address, as text
    Frame hello;           // its header (a Hello: the kind is checked)
    std::string payload;   // its payload, at most the limit given
    std::shared_ptr<void> context;  // what serve attached to it on accept (its handshake, say)
};

class WaitingConnections {
public:
    using Clock = std::chrono::steady_clock;

    WaitingConnections(std::size_t max_waiting, std::chrono::milliseconds timeout, std::uint32_t max_hello_bytes);

    // A connection just accepted. When the room is full, one is closed first
    // (the oldest of the address holding the most).
    void add(UniqueFd fd, std::string from, std::shared_ptr<void> context = {});
    // Refuses a connection: sends `why` as an Error frame (without waiting),
    // then holds it until the peer closes or a second passes, reading and
    // dropping what it still sends, so that the close does not reset the
    // connection before the peer has read why.
    void refuse(UniqueFd fd, const std::string& from, const std::string& why);

    // Appends a pollfd per connection to `polled` (remembering where).
    void poll_set(std::vector<pollfd>& polled);
    // Milliseconds until the nearest deadline, at most `cap`.
    int wait_ms(int cap) const;
    // After poll(): reads what arrived, closes connections past their
    // deadline, closed by the peer, or whose first frame is not a Hello (with
    // a line in the log), and returns those whose Hello is whole.
    std::vector<Arrival> service(const std::vector<pollfd>& polled);

    std::size_t size() const { return entries_.size(); }

private:
    struct Entry {
        UniqueFd fd;
        std::string from;
        std::shared_ptr<void> context;
        Clock::time_point deadline;
        bool refused = false;  // lingering after a refusal
        std::uint8_t header[kHeaderBytes] = {};
        std::size_t header_got = 0;
        Frame frame;
        std::string payload;
        std::size_t payload_got = 0;
        std::size_t poll_index = SIZE_MAX;
    };
    using Entries = std::list<Entry>;

    void make_room();
    // Reads what is there; true when the Hello is whole. Throws (a refusal) on a frame that is not one.
    bool read_some(Entry& e);
    void drain(Entry& e, bool& ended);

    std::size_t max_;
    std::chrono::milliseconds timeout_;
    std::uint32_t max_hello_;
    Entries entries_;  // oldest first
};

}  // namespace slabcast::mover
