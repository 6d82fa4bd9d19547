// TCP plumbing of the data mover: connecting, listening, and whole frames in
// and out of a socket.
#pragma once

#include "slabcast/unique_fd.h"

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

namespace slabcast::mover {

UniqueFd connect_tcp(const std::string& host, int port, int peer_timeout_s);  // throws naming the peer

// Connections a thread waits on for a peer's first answer (its Challenge, its
// proof): stop() shuts each down at once, and any added after it is
// refused, so that nothing waits the peer timeout for a peer that never answers.
class StoppableSockets {
public:
    bool add(int fd);     // false once stopped: the caller gives up
    void remove(int fd);  // before the descriptor closes, and its number is reused
    void stop();

private:
    std::mutex mutex_;
    std::set<int> fds_;
    bool stopped_ = false;
};
UniqueFd listen_tcp(const std::string& address, int port);
// No Nagle delay for small frames; buffers left to autotuning; a peer that
// vanishes (host down, path cut) is given up after about `peer_timeout_s`.
void tune_tcp(int fd, int peer_timeout_s);

// What read_full throws when the socket's SO_RCVTIMEO passed without a byte:
// the peer is there but silent, which serve names by the timeout it set.
class PeerSilent : public std::runtime_error {
public:
    PeerSilent() : std::runtime_error("the peer sent nothing for the idle timeout, connection dropped") {}
};

// What a channel's read throws once its deadline (Channel::set_deadline)
// has passed: however the peer paced its bytes, it did not finish in time.
class DeadlinePassed : public std::runtime_error {
public:
    DeadlinePassed() : std::runtime_error("the peer did not finish in time, connection dropped") {}
};

// false on an orderly EOF before the first byte; throws on an error, an EOF
// in the middle, or (PeerSilent) nothing for the socket's SO_RCVTIMEO.
bool read_full(int fd, void* buf, std::size_t n);
// What the socket holds now, up to `n` bytes, waiting for at least one: 0 on
// an orderly EOF; throws as read_full does.
std::size_t recv_some(int fd, void* buf, std::size_t n);
// `more`: more follows at once (MSG_MORE), so a frame's header and its
// payload sent apart still leave in full segments.
void write_full(int fd, const void* buf, std::size_t n, bool more = false);
// Sends `length` bytes of the open file `file` at `offset` on socket `fd`
// from the page cache (sendfile), without copying them through this process.
// A file that cannot be spliced is read and sent; one that ends early (it
// shrank after it was read) is sent with zeros for what is missing, so the
// stream stays in step and the block fails its check at the receiving end.
void send_file(int fd, int file, std::uint64_t offset, std::size_t length);
// `n` bytes of `file` at `offset` into `buf`, zeros for any past its end.
void read_or_zeros(int file, std::uint64_t offset, std::uint8_t* buf, std::size_t n);

}  // namespace slabcast::mover
