#include "receive/batch_receiver.h"

#include <netinet/in.h>
#include <netinet/udp.h>

#include <cerrno>
#include <cstring>

namespace slabcast {
namespace {
constexpr std::size_t kControlBytes = 64;  // room for one UDP_GRO cmsg
}

BatchReceiver::BatchReceiver(int batch, bool gro)
    : gro_(gro),
      buffer_bytes_(gro ? 65536 : kMaxDatagram),
      buffers_(static_cast<std::size_t>(batch) * buffer_bytes_),
      controls_(static_cast<std::size_t>(batch) * kControlBytes),
      iovs_(batch),
      msgs_(batch),
      sources_(batch) {
    for (int i = 0; i < batch; ++i) iovs_[i] = iovec{buffers_.data() + i * buffer_bytes_, buffer_bytes_};
}

long BatchReceiver::receive(int fd, const std::function<void(const std::uint8_t*, std::size_t)>& on_datagram) {
    for (std::size_t i = 0; i < msgs_.size(); ++i) {
        msgs_[i] = mmsghdr{};
        msgs_[i].msg_hdr.msg_iov = &iovs_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
        if (filter_) {
            msgs_[i].msg_hdr.msg_name = &sources_[i];
            msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
        }
        if (gro_) {
            msgs_[i].msg_hdr.msg_control = controls_.data() + i * kControlBytes;
            msgs_[i].msg_hdr.msg_controllen = kControlBytes;
        }
    }
    const int got = ::recvmmsg(fd, msgs_.data(), static_cast<unsigned>(msgs_.size()), MSG_WAITFORONE, nullptr);
    if (got < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    long bytes = 0;
    for (int i = 0; i < got; ++i) {
        const msghdr& h = msgs_[i].msg_hdr;
        const auto* data = static_cast<const std::uint8_t*>(iovs_[i].iov_base);
        const std::size_t length = msgs_[i].msg_len;
        bytes += static_cast<long>(length);
        if (filter_ && !filter_->allows(sources_[i])) {
            ++foreign_;
            continue;
        }
        if (h.msg_flags & MSG_TRUNC) {
            on_datagram(data, kMaxDatagram + 1);
            continue;
        }
        std::size_t segment = 0;  // the sender's datagram size, when GRO coalesced several
        for (cmsghdr* c = CMSG_FIRSTHDR(&h); gro_ && c; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c))
            if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                int size = 0;
                std::memcpy(&size, CMSG_DATA(c), sizeof size);
                segment = static_cast<std::size_t>(size);
            }
        if (segment == 0 || segment >= length) {
            on_datagram(data, length);
            continue;
        }
        for (std::size_t at = 0; at < length; at += segment) on_datagram(data + at, std::min(segment, length - at));
    }
    return bytes;
}

}  // namespace slabcast
