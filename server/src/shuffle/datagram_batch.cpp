#include "shuffle/datagram_batch.h"

#include <netinet/udp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast {

DatagramBatch::DatagramBatch(int packets, std::size_t packet_bytes, bool gso)
    : capacity_(packets), gso_(gso), buffer_(static_cast<std::size_t>(packets) * packet_bytes) {
    sizes_.reserve(static_cast<std::size_t>(packets));
}

void DatagramBatch::clear() {
    sizes_.clear();
    bytes_ = 0;
}

void DatagramBatch::add(std::size_t size) {
    sizes_.push_back(size);
    bytes_ += size;
}

void DatagramBatch::build_messages() {
    iov_.clear();
    segments_.clear();
    for (std::size_t i = 0, at = 0; i < sizes_.size();) {
        const std::size_t segment = sizes_[i];
        std::size_t j = i + 1, length = segment;
        while (gso_ && j < sizes_.size() && j - i < kGsoPackets && sizes_[j - 1] == segment && sizes_[j] <= segment)
            length += sizes_[j++];
        iov_.push_back(iovec{buffer_.data() + at, length});
        segments_.push_back(j - i > 1 ? static_cast<std::uint16_t>(segment) : 0);
        at += length;
        i = j;
    }
    msgs_.assign(iov_.size(), mmsghdr{});
    controls_.resize(iov_.size());
    for (std::size_t i = 0; i < iov_.size(); ++i) {
        msghdr& m = msgs_[i].msg_hdr;
        m.msg_iov = &iov_[i];
        m.msg_iovlen = 1;
        if (segments_[i] == 0) continue;
        // The segment size of this message: UDP_SEGMENT as ancillary data.
        m.msg_control = controls_[i].bytes;
        m.msg_controllen = sizeof controls_[i].bytes;
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
        std::memcpy(CMSG_DATA(c), &segments_[i], sizeof(std::uint16_t));
    }
}

// One sendmmsg; true when it sent or was refused (then `refused`), false to retry.
bool DatagramBatch::send_some(int fd, std::size_t& done, bool& refused) {
    const int n = ::sendmmsg(fd, msgs_.data() + done, static_cast<unsigned>(msgs_.size() - done), 0);
    if (n > 0) {
        done += static_cast<std::size_t>(n);
        return true;
    }
    if (errno == ECONNREFUSED) {  // ICMP port unreachable from an earlier datagram: nobody listens yet
        refused = true;
        return true;
    }
    if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
        ::usleep(50);
        return false;
    }
    throw std::runtime_error(std::string("sendmmsg: ") + std::strerror(errno));
}

}  // namespace slabcast
