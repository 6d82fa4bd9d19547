// The raw ceiling of the UDP socket path on this host: a sender that hands the
// kernel 7 x 8968-byte datagrams per message (UDP_SEGMENT, sendmmsg) and a
// receiver that takes them coalesced (UDP_GRO, recvmmsg of 64 KiB buffers),
// each on its own core, counting bytes and nothing else. The same offloads as
// the shuffler and the receiver use; no values are packed or placed. iperf3
// 3.12 (Debian 12) has neither offload (its --gsro came in 2025), nor does
// any UDP tool Debian 12 ships, so this is the peer that uses them.
//
//   slabcast_udp_gso_pair [--seconds 5] [--port 54100] [--sender-cpu 0] [--receiver-cpu 1]
//
// Prints one JSON line: bytes sent and the sender's seconds; bytes received and
// the receiver's window, from the first datagram's arrival to the last's
// (testing/bench/loopback_vs_iperf3.py counts every receiver this way).
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kSegment = 8968;        // a quad packet of 560 records, as the shuffler sends
constexpr int kSegmentsPerSend = 7;   // what fits in one 64 KiB GSO message
constexpr int kBatch = 8;             // messages per sendmmsg / recvmmsg
constexpr int kBufferBytes = 65536;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int socket_on(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    const int buffer = 64 << 20;  // as the shuffler and receiver ask (root: past rmem_max)
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof buffer);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer);
    return fd;
}

void fail(const char* what) {
    std::perror(what);
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 5;
    int port = 54100, sender_cpu = 0, receiver_cpu = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--seconds") seconds = std::atof(argv[i + 1]);
        else if (a == "--port") port = std::atoi(argv[i + 1]);
        else if (a == "--sender-cpu") sender_cpu = std::atoi(argv[i + 1]);
        else if (a == "--receiver-cpu") receiver_cpu = std::atoi(argv[i + 1]);
        else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    std::atomic<bool> ready{false}, sending{true};
    unsigned long long received = 0;
    double first = 0, last = 0;
    std::thread receiver([&] {
        const int fd = socket_on(receiver_cpu);
        const int one = 1;
        if (::setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) != 0) fail("UDP_GRO");
        if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
        timeval idle{0, 200000};  // after the sender is done, 200 ms of quiet ends the count
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
        std::vector<char> buffers(kBatch * kBufferBytes);
        iovec iov[kBatch];
        mmsghdr msgs[kBatch]{};
        for (int k = 0; k < kBatch; ++k) {
            iov[k] = {buffers.data() + k * kBufferBytes, kBufferBytes};
            msgs[k].msg_hdr.msg_iov = &iov[k];
            msgs[k].msg_hdr.msg_iovlen = 1;
        }
        ready = true;
        for (;;) {
            const int n = ::recvmmsg(fd, msgs, kBatch, 0, nullptr);
            if (n <= 0) {
                if (!sending) break;
                continue;
            }
            last = now();
            if (received == 0) first = last;
            for (int k = 0; k < n; ++k) received += msgs[k].msg_len;
        }
        ::close(fd);
    });
    while (!ready) std::this_thread::yield();

    const int fd = socket_on(sender_cpu);
    if (::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &kSegment, sizeof kSegment) != 0) fail("UDP_SEGMENT");
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("connect");
    std::vector<char> payload(kSegment * kSegmentsPerSend, 'x');
    iovec iov{payload.data(), payload.size()};
    mmsghdr msgs[kBatch]{};
    for (auto& m : msgs) {
        m.msg_hdr.msg_iov = &iov;
        m.msg_hdr.msg_iovlen = 1;
    }
    unsigned long long sent = 0;
    const double start = now();
    double end = start;
    while ((end = now()) - start < seconds) {
        const int n = ::sendmmsg(fd, msgs, kBatch, 0);
        if (n < 0 && errno != ENOBUFS && errno != EAGAIN) fail("sendmmsg");
        sent += static_cast<unsigned long long>(n > 0 ? n : 0) * payload.size();
    }
    sending = false;
    receiver.join();
    ::close(fd);
    std::printf("{\"segment\": %d, \"segments_per_send\": %d, \"sent_bytes\": %llu, \"sent_seconds\": %.6f, "
                "\"received_bytes\": %llu, \"received_seconds\": %.6f}\n",
                kSegment, kSegmentsPerSend, sent, end - start, received, last - first);
    return 0;
}
