// Real UDP sockets on loopback: GSO super-datagrams out, GRO in, and the
// receiver hands back exactly the sender's datagrams.
#include "receive/batch_receiver.h"
#include "base/udp.h"

#include "slabcast/quad_packet.h"

#include <catch2/catch.hpp>
#include <sys/socket.h>

#include <chrono>
#include <vector>

using namespace slabcast;

namespace {

struct LoopbackPair {
    Socket rx{open_udp_socket(AF_INET)}, tx{open_udp_socket(AF_INET)};
    LoopbackPair(bool gro) {
        bind_socket(rx.fd(), parse_endpoint("127.0.0.1:0"));
        set_receive_timeout(rx.fd(), 200);
        if (gro) REQUIRE(enable_gro(rx.fd()));
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        getsockname(rx.fd(), reinterpret_cast<sockaddr*>(&a), &len);
        REQUIRE(::connect(tx.fd(), reinterpret_cast<sockaddr*>(&a), len) == 0);
    }
};

std::vector<std::uint8_t> numbered_packets(int full, int last_records) {
    std::vector<std::uint8_t> buf(full * quad::kMaxPacketBytes + quad::packet_bytes(last_records));
    for (int i = 0; i <= full; ++i) {
        const int n = i < full ? quad::kMaxRecords : last_records;
        quad::write_header(buf.data() + i * quad::kMaxPacketBytes, i, n);
    }
    return buf;
}

// Until `expected` datagrams came, or 30 s: on a busy machine loopback may
// hand them over late (its softirq deferred), so no count of tries is enough.
std::vector<std::pair<int, std::size_t>> drain(int fd, BatchReceiver& r, std::size_t expected) {
    std::vector<std::pair<int, std::size_t>> got;  // (batch field, length)
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (got.size() < expected && std::chrono::steady_clock::now() < deadline)
        r.receive(fd, [&](const Datagram& datagram) {
            const std::uint8_t* d = datagram.data;
            const std::size_t n = datagram.length;
            std::int32_t batch = -1;
            if (n >= 4) std::memcpy(&batch, d, 4);
            got.emplace_back(batch, n);
        });
    return got;
}

}  // namespace

TEST_CASE("GSO super-datagrams come back as the original datagrams through GRO") {
    LoopbackPair link(true);
    REQUIRE(enable_gso(link.tx.fd(), static_cast<int>(quad::kMaxPacketBytes)));
    const auto packets = numbered_packets(6, 100);  // 6 full packets + a short last one, one send
    REQUIRE(::send(link.tx.fd(), packets.data(), packets.size(), 0) == static_cast<ssize_t>(packets.size()));
    BatchReceiver r(8, true);
    const auto got = drain(link.rx.fd(), r, 7);
    REQUIRE(got.size() == 7);
    for (int i = 0; i < 6; ++i) CHECK(got[i] == std::make_pair(i, quad::kMaxPacketBytes));
    CHECK(got[6] == std::make_pair(6, quad::packet_bytes(100)));
}

TEST_CASE("without GRO, datagrams arrive one by one; an oversized one is flagged") {
    LoopbackPair link(false);
    const auto packets = numbered_packets(2, 3);
    for (int i = 0; i < 3; ++i) {
        const std::size_t n = i < 2 ? quad::kMaxPacketBytes : quad::packet_bytes(3);
        ::send(link.tx.fd(), packets.data() + i * quad::kMaxPacketBytes, n, 0);
    }
    std::vector<std::uint8_t> big(20000, 0);
    ::send(link.tx.fd(), big.data(), big.size(), 0);
    BatchReceiver r(4, false);
    const auto got = drain(link.rx.fd(), r, 4);
    REQUIRE(got.size() == 4);
    CHECK(got[0].second == quad::kMaxPacketBytes);
    CHECK(got[2] == std::make_pair(2, quad::packet_bytes(3)));
    CHECK(got[3].second > BatchReceiver::kMaxDatagram);  // truncated: rejected by the framing check
}
