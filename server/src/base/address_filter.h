// The receiver's sender allowlist: addresses and CIDR blocks (IPv4 and IPv6)
// a stream accepts packets from. UDP is spoofable on a shared network, so a
// stream should take data only from its shuffler's host (or subnet).
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace slabcast {

class AddressFilter {
public:
    // "10.0.0.0/8", "192.168.1.5", "fd00::/8", "::1"; throws std::invalid_argument
    // naming the text when it is not an address or the prefix is out of range.
    void add(const std::string& cidr);
    void add_list(const std::string& comma_separated);
    bool empty() const { return blocks_.empty(); }
    // An IPv4-mapped IPv6 source (::ffff:a.b.c.d) is judged as the IPv4 address.
    bool allows(const sockaddr_storage& source) const;
    std::string to_string() const;

private:
    struct Block {
        bool v4;
        std::array<std::uint8_t, 16> address;
        int prefix;
        std::string text;
    };
    std::vector<Block> blocks_;
};

}  // namespace slabcast
