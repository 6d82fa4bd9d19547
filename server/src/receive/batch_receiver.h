// Receives UDP datagrams in batches (recvmmsg) and, where the socket has UDP
// GRO, splits each coalesced super-datagram back into the sender's datagrams.
// No allocation per call: buffers are made once.
//
// Full raw run packets may land straight in the slab (a `LandingSite`): the
// kernel writes each datagram's 36-byte header into this receiver's buffer
// and its payload where the run that follows the last one stored belongs, so
// that a stream sent in scan order is placed with the kernel's copy alone
// (Balman et al., 2012, section 4.2: the receiving core's copies are what
// limit a stream). A datagram that did not land exactly where it belongs is
// copied out whole before any datagram of the batch is handled, so a guess
// that missed costs a copy and never misplaces a value; what it left in the
// slab is a hole of the step being written, which is never shown.
#pragma once

#include "base/address_filter.h"
#include "receive/landing_site.h"

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace slabcast {

// One datagram as handed over: `length` bytes, contiguous at `data`, or, when
// it landed, its header at `data` and the rest of it at `landed`; `from`,
// its sender's address (valid until the next receive()).
struct Datagram {
    const std::uint8_t* data = nullptr;
    std::size_t length = 0;
    const std::uint8_t* landed = nullptr;
    const sockaddr_storage* from = nullptr;
};

class BatchReceiver {
public:
    // `gro`: the socket has UDP_GRO enabled (buffers are then 64 KiB each).
    BatchReceiver(int batch, bool gro);

    // Waits for at least one datagram (up to the socket's receive timeout) and
    // calls on_datagram for each, in order. A datagram too long for any valid
    // packet is passed with a length past kMaxDatagram so that the caller's
    // framing check rejects it. Returns the bytes received, 0 on a timeout or
    // interruption, -1 with errno on another error.
    long receive(int fd, const std::function<void(const Datagram&)>& on_datagram);

    static constexpr std::size_t kMaxDatagram = 9216;  // > 8968, the largest quad packet

    // Only datagrams from senders the filter allows reach on_datagram; the
    // others are counted in foreign() and dropped. Null (the default): all pass.
    void set_filter(const AddressFilter* filter) { filter_ = filter; }
    std::uint64_t foreign() const { return foreign_; }

    // Lets full raw run packets land in `site` (null: never).
    void set_landing(LandingSite* site) { site_ = site; }
    std::uint64_t landed() const { return landed_; }           // datagrams placed by the kernel's copy alone
    std::uint64_t copied_out() const { return copied_out_; }   // landed (partly) amiss: copied out

private:
    void lay_out(int message, LandingSite::Room& room);
    Datagram place(int message, std::size_t offset, std::size_t length, std::uint64_t& tried, std::uint64_t& hit);
    void gather(int message, std::size_t offset, std::size_t length, std::uint8_t* out) const;

    bool gro_;
    std::size_t buffer_bytes_;
    int slots_;  // full datagrams a message may hold: the most that may land
    std::vector<std::uint8_t> buffers_;
    std::unique_ptr<std::uint8_t[]> copies_;  // datagrams copied out of the slab (pages touched when used)
    std::vector<std::uint8_t> controls_;
    std::vector<iovec> iovs_;   // per message: (header, payload) per slot, then the rest
    std::vector<int> landing_;  // per message: slots laid out in the slab this call
    std::vector<mmsghdr> msgs_;
    std::vector<sockaddr_storage> sources_;
    std::vector<Datagram> datagrams_;
    const AddressFilter* filter_ = nullptr;
    std::uint64_t foreign_ = 0;
    LandingSite* site_ = nullptr;
    std::uint64_t landed_ = 0, copied_out_ = 0;
    int rest_ = 0;  // calls left without landing after guesses that mostly missed
};

}  // namespace slabcast
