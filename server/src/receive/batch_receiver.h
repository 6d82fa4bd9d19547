// Receives UDP datagrams in batches (recvmmsg) and, where the socket has UDP
// GRO, splits each coalesced super-datagram back into the sender's datagrams.
// No allocation per call: buffers are made once.
#pragma once

#include "host/address_filter.h"

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace slabcast {

class BatchReceiver {
public:
    // `gro`: the socket has UDP_GRO enabled (buffers are then 64 KiB each).
    BatchReceiver(int batch, bool gro);

    // Waits for at least one datagram (up to the socket's receive timeout) and
    // calls on_datagram(data, length) for each, in order. A datagram too long for
    // any valid packet is passed with a length past kMaxDatagram so that the
    // caller's framing check rejects it. Returns the bytes received, 0 on a
    // timeout or interruption, -1 with errno on another error.
    long receive(int fd, const std::function<void(const std::uint8_t*, std::size_t)>& on_datagram);

    static constexpr std::size_t kMaxDatagram = 9216;  // > 8968, the largest quad packet

    // Only datagrams from senders the filter allows reach on_datagram; the
    // others are counted in foreign() and dropped. Null (the default): all pass.
    void set_filter(const AddressFilter* filter) { filter_ = filter; }
    std::uint64_t foreign() const { return foreign_; }

private:
    bool gro_;
    std::size_t buffer_bytes_;
    std::vector<std::uint8_t> buffers_;
    std::vector<std::uint8_t> controls_;
    std::vector<iovec> iovs_;
    std::vector<mmsghdr> msgs_;
    std::vector<sockaddr_storage> sources_;
    const AddressFilter* filter_ = nullptr;
    std::uint64_t foreign_ = 0;
};

}  // namespace slabcast
