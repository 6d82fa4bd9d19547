// One shuffler's batch of packets, packed back to back, sent with one
// sendmmsg: a message per packet, or with UDP GSO up to kGsoPackets packets of
// one size (the last of them may be shorter) per message, which the kernel
// cuts into datagrams again (Balman et al., 2012, section 4.2: the sender's
// cost per packet is what limits a stream). Quad packets and run packets of
// codec none or zfp all have one size but a step's last; lz4 packets vary in
// size and mostly go one a message.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slabcast {

class DatagramBatch {
public:
    static constexpr int kGsoPackets = 7;  // 7 x 8968 bytes: the most under 64 KiB

    // Room for `packets` packets of at most `packet_bytes` each; `gso`: the
    // socket takes UDP_SEGMENT.
    DatagramBatch(int packets, std::size_t packet_bytes, bool gso);

    void clear();
    // Where the next packet goes (room for packet_bytes).
    std::uint8_t* next() { return buffer_.data() + bytes_; }
    // The packet written at next() is `size` bytes.
    void add(std::size_t size);
    int count() const { return static_cast<int>(sizes_.size()); }
    bool full() const { return count() == capacity_; }
    std::size_t bytes() const { return bytes_; }
    // Calls f(packet, size) for each packet, in order (what a receiver would get).
    template <class F>
    void for_each_packet(F f) const {
        std::size_t at = 0;
        for (const std::size_t size : sizes_) {
            f(buffer_.data() + at, size);
            at += size;
        }
    }

    // Sends them all on connected socket `fd`, retrying what the kernel
    // could not take yet; false when `stop` turned true first. A refused
    // send (nobody listening yet) calls `on_refused` and goes on: UDP is
    // lossy by design. Other errors throw std::runtime_error.
    template <class Stop, class Refused>
    bool send(int fd, Stop stop, Refused on_refused);

private:
    void build_messages();
    bool send_some(int fd, std::size_t& done, bool& refused);

    int capacity_;
    bool gso_;
    std::vector<std::uint8_t> buffer_;
    std::size_t bytes_ = 0;
    std::vector<std::size_t> sizes_;
    std::vector<std::uint16_t> segments_;  // per message: GSO segment size, 0 for one datagram
    union Control {
        char bytes[CMSG_SPACE(sizeof(std::uint16_t))];
        cmsghdr align;
    };
    std::vector<Control> controls_;
    std::vector<iovec> iov_;
    std::vector<mmsghdr> msgs_;
};

template <class Stop, class Refused>
bool DatagramBatch::send(int fd, Stop stop, Refused on_refused) {
    build_messages();
    std::size_t done = 0;
    while (done < msgs_.size()) {
        if (stop()) return false;
        bool refused = false;
        if (!send_some(fd, done, refused)) continue;
        if (refused) on_refused();
    }
    return true;
}

}  // namespace slabcast
