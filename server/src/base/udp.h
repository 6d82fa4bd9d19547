// UDP socket helpers shared by every role.
#pragma once

#include "slabcast/unique_fd.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <string>
#include <vector>

namespace slabcast {

struct Endpoint {
    sockaddr_storage addr{};
    socklen_t length = 0;
    std::string text;  // as given, for messages
};

// "HOST:PORT" or "[v6]:PORT"; resolves names. Throws std::invalid_argument naming the text.
Endpoint parse_endpoint(const std::string& text);
// "HOST:PORT" or "HOST:FIRST-LAST" (consecutive ports, one stream or peer
// each), every one as "HOST:PORT". Throws std::invalid_argument naming the text.
std::vector<std::string> expand_port_ranges(const std::vector<std::string>& texts);
// Same address with another port.
Endpoint with_port(const Endpoint& e, int port);
std::string to_string(const sockaddr_storage& addr);
std::string address_only(const sockaddr_storage& addr);  // "10.0.0.1", "::1": no port

// A UDP socket of the endpoint's family; bound to `bind_to` when given.
int open_udp_socket(int family);
void bind_socket(int fd, const Endpoint& bind_to);

// Raises SO_RCVBUF/SO_SNDBUF to `bytes`, using the FORCE variants (root) past the
// sysctl limits, and logs a warning with the fix when the kernel clamps it.
// Returns the size the kernel granted (as reported by getsockopt, which doubles it).
int raise_buffer(int fd, bool receive, int bytes, const std::string& role);

// UDP segmentation offload (send) and receive offload: false where the kernel
// lacks them, and the caller falls back to one datagram per packet.
bool enable_gso(int fd, int segment_bytes);
bool enable_gro(int fd);

// Wakes blocking receives every `ms` so loops can notice a stop request.
void set_receive_timeout(int fd, int ms);

// A role's UDP socket, owned (and closed) through its UniqueFd; move-only.
class Socket {
public:
    explicit Socket(int fd = -1) : fd_(fd) {}
    int fd() const { return fd_.get(); }

private:
    UniqueFd fd_;
};

}  // namespace slabcast
