#include "receive/batch_receiver.h"

#include "slabcast/run_packet.h"

#include <netinet/in.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace slabcast {
namespace {
constexpr std::size_t kControlBytes = 64;  // room for one UDP_GRO cmsg
constexpr std::size_t kFull = run::kMaxPacketBytes;  // a full run packet: header and 2233 values
// When most of a call's landings missed (a sender out of scan order, GRO
// cutting messages unevenly), this many calls go without.
constexpr int kRestAfterMisses = 64;
}  // namespace

BatchReceiver::BatchReceiver(int batch, bool gro)
    : gro_(gro),
      buffer_bytes_(gro ? 65536 : kMaxDatagram),
      slots_(gro ? static_cast<int>(65535 / kFull) : 1),
      buffers_(static_cast<std::size_t>(batch) * buffer_bytes_),
      copies_(new std::uint8_t[static_cast<std::size_t>(batch) * buffer_bytes_]),
      controls_(static_cast<std::size_t>(batch) * kControlBytes),
      iovs_(static_cast<std::size_t>(batch) * static_cast<std::size_t>(2 * slots_ + 1)),
      landing_(static_cast<std::size_t>(batch), 0),
      msgs_(batch),
      sources_(batch) {
    datagrams_.reserve(static_cast<std::size_t>(batch) * static_cast<std::size_t>(slots_));
}

// Message `m`'s buffers: a (header, payload) pair per slot that has room in
// the slab, then the rest of its own buffer. The slots take the first bytes
// of the message, so the whole message never has more room than the buffer
// alone would give it.
void BatchReceiver::lay_out(int m, LandingSite::Room& room) {
    iovec* iov = &iovs_[static_cast<std::size_t>(m) * static_cast<std::size_t>(2 * slots_ + 1)];
    std::uint8_t* own = buffers_.data() + static_cast<std::size_t>(m) * buffer_bytes_;
    int k = 0, n = 0;
    for (; k < slots_ && room.bytes >= run::kMaxPayloadBytes; ++k) {
        iov[n++] = iovec{own + k * run::kHeaderBytes, run::kHeaderBytes};
        iov[n++] = iovec{room.at, run::kMaxPayloadBytes};
        room.at += run::kMaxPayloadBytes;
        room.bytes -= run::kMaxPayloadBytes;
    }
    iov[n++] = iovec{own + k * run::kHeaderBytes, buffer_bytes_ - static_cast<std::size_t>(k) * kFull};
    landing_[static_cast<std::size_t>(m)] = k;
    msgs_[m].msg_hdr.msg_iov = iov;
    msgs_[m].msg_hdr.msg_iovlen = static_cast<std::size_t>(n);
}

void BatchReceiver::gather(int m, std::size_t offset, std::size_t length, std::uint8_t* out) const {
    const msghdr& h = msgs_[m].msg_hdr;
    for (std::size_t i = 0; i < h.msg_iovlen && length > 0; ++i) {
        const iovec& v = h.msg_iov[i];
        if (offset >= v.iov_len) {
            offset -= v.iov_len;
            continue;
        }
        const std::size_t n = std::min(length, v.iov_len - offset);
        std::memcpy(out, static_cast<const std::uint8_t*>(v.iov_base) + offset, n);
        out += n;
        length -= n;
        offset = 0;
    }
}

// The datagram at bytes [offset, offset + length) of message `m`.
Datagram BatchReceiver::place(int m, std::size_t offset, std::size_t length, std::uint64_t& tried,
                              std::uint64_t& hit) {
    const int k = landing_[static_cast<std::size_t>(m)];
    std::uint8_t* own = buffers_.data() + static_cast<std::size_t>(m) * buffer_bytes_;
    const std::size_t slot = offset / kFull;
    if (offset % kFull == 0 && slot < static_cast<std::size_t>(k) && length == kFull) {
        const std::uint8_t* header = own + slot * run::kHeaderBytes;
        const auto* payload = static_cast<const std::uint8_t*>(msgs_[m].msg_hdr.msg_iov[2 * slot + 1].iov_base);
        ++tried;
        if (site_->landed_in_place(header, length, payload)) {
            ++hit;
            return Datagram{header, length, payload};
        }
    }
    const std::size_t slots_end = static_cast<std::size_t>(k) * kFull;
    if (offset >= slots_end)  // wholly in the message's own buffer, in one piece
        return Datagram{own + static_cast<std::size_t>(k) * run::kHeaderBytes + (offset - slots_end), length};
    // Partly or wholly in the slab: copied out now, before any datagram of the
    // batch is stored, as storing one may write where this one landed.
    std::uint8_t* copy = copies_.get() + static_cast<std::size_t>(m) * buffer_bytes_ + offset;
    gather(m, offset, length, copy);
    ++copied_out_;
    return Datagram{copy, length};
}

long BatchReceiver::receive(int fd, const std::function<void(const Datagram&)>& on_datagram) {
    LandingSite::Room room;
    if (site_ && rest_ == 0) room = site_->landing_room();
    else if (rest_ > 0) --rest_;
    // While payloads may land, one GRO message a call: how many datagrams a
    // message holds depends on the sender's pacing (paced bursts of 10 arrive
    // as messages of 7 and 3), so the next message's place is known only once
    // this one is stored. A syscall per ~62 KB message costs far less than the
    // copy it saves; without GRO a message is one datagram, and batches stay.
    const std::size_t count = gro_ && room.bytes >= run::kMaxPayloadBytes ? 1 : msgs_.size();
    for (std::size_t i = 0; i < count; ++i) {
        msgs_[i] = mmsghdr{};
        lay_out(static_cast<int>(i), room);
        msgs_[i].msg_hdr.msg_name = &sources_[i];
        msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
        if (gro_) {
            msgs_[i].msg_hdr.msg_control = controls_.data() + i * kControlBytes;
            msgs_[i].msg_hdr.msg_controllen = kControlBytes;
        }
    }
    const int got = ::recvmmsg(fd, msgs_.data(), static_cast<unsigned>(count), MSG_WAITFORONE, nullptr);
    if (got < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    // First every datagram's place (copying out what landed amiss), then
    // the handling, in order of arrival.
    datagrams_.clear();
    std::uint64_t tried = 0, hit = 0;
    long bytes = 0;
    for (int i = 0; i < got; ++i) {
        const msghdr& h = msgs_[i].msg_hdr;
        const std::size_t length = msgs_[i].msg_len;
        bytes += static_cast<long>(length);
        if (filter_ && !filter_->allows(sources_[i])) {
            ++foreign_;
            continue;
        }
        std::uint8_t* own = buffers_.data() + static_cast<std::size_t>(i) * buffer_bytes_;
        if (h.msg_flags & MSG_TRUNC) {
            datagrams_.push_back(Datagram{own, kMaxDatagram + 1, nullptr, &sources_[i]});
            continue;
        }
        if (length == 0) {  // rejected by the caller's framing check, counted there
            datagrams_.push_back(Datagram{own, 0, nullptr, &sources_[i]});
            continue;
        }
        std::size_t segment = 0;  // the sender's datagram size, when GRO coalesced several
        for (cmsghdr* c = CMSG_FIRSTHDR(&h); gro_ && c; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c))
            if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                int size = 0;
                std::memcpy(&size, CMSG_DATA(c), sizeof size);
                segment = static_cast<std::size_t>(size);
            }
        if (segment == 0 || segment >= length) segment = length;
        for (std::size_t at = 0; at < length; at += segment) {
            datagrams_.push_back(place(i, at, std::min(segment, length - at), tried, hit));
            datagrams_.back().from = &sources_[i];
        }
    }
    landed_ += hit;
    if (tried >= 8 && 2 * hit < tried) rest_ = kRestAfterMisses;
    for (const Datagram& d : datagrams_) on_datagram(d);
    return bytes;
}

}  // namespace slabcast
