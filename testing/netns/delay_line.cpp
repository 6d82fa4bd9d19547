// A delay line for every IP packet crossing the testbed's WAN namespace, TCP
// included: this kernel has no netem (nor fq), so a TUN device stands in.
//
// The testbed (netns_testbed.py) routes whatever arrives at the WAN namespace
// from a host into the TUN device (policy routing on the incoming interface);
// this program reads each packet, holds it for --delay-ms and writes it back
// into the device, from where the kernel forwards it to its destination as
// usual. The hosts' TCP sees a real round trip of twice the delay, with its
// windows, slow start and acknowledgements, as across a WAN. (A first version
// in Python spent most of a core at 1.5 Gbit/s and became the bottleneck.)
//
// The device carries the hosts' TCP segmentation offload through: with a
// virtio-net header on every packet (IFF_VNET_HDR) and TSO announced
// (TUNSETOFFLOAD), the kernel hands over a host's 64 KiB send as one packet
// and cuts it into MTU-sized segments only where it leaves for the other host,
// as a NIC would. Cutting it here instead costs seven reads and writes where
// one does, and most of a core at 5 Gbit/s, on the same cores as the hosts
// under test.
//
// With --loss P it also loses packets, as a WAN does (this kernel has no
// netem): each packet to --loss-to ADDR (the receiving host: data, not its
// acknowledgements) is dropped at random with probability P, or, with
// --burst B, in bursts of B packets on average (a Gilbert-Elliott channel:
// a good state that loses nothing and a bad state that loses everything, the
// mean loss P). A lossy line announces no segmentation offload, so that the
// kernel hands over TCP one segment a packet, as a WAN's routers see it,
// and a loss is one segment's. Otherwise no packet is dropped unless more
// than --max-mb are held at once (counted). On SIGTERM/SIGINT it writes its
// counts as JSON to --stats and exits.
//
//   ip netns exec WAN slabcast_delay_line --dev NAME --delay-ms 16 --stats FILE --ready FILE
//       [--loss P [--burst B] --loss-to ADDR --seed N]
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

volatile std::sig_atomic_t stopping = 0;

using Clock = std::chrono::steady_clock;

// A GSO packet: at most 64 KiB of IP, after its virtio-net header (struct
// virtio_net_hdr, 10 bytes, the device's default; <linux/virtio_net.h> itself
// does not compile as C++).
constexpr std::size_t kVirtioNetHeader = 10;
constexpr std::size_t kMaxPacket = 65536 + kVirtioNetHeader;

struct Held {
    Clock::time_point due;
    std::unique_ptr<char[]> bytes;  // kMaxPacket, reused (no allocation nor clearing per packet)
    std::size_t length;
};

// Which packets the line loses: none, at random, or in Gilbert-Elliott bursts.
class LossModel {
public:
    LossModel(double loss, double burst, unsigned seed) : loss_(loss), rng_(seed) {
        if (burst > 1) {
            leave_bad_ = 1.0 / burst;                        // a burst ends after B losses on average
            enter_bad_ = loss * leave_bad_ / (1.0 - loss);  // in the bad state a share `loss` of the time
        }
    }
    bool lose() {
        if (loss_ <= 0) return false;
        if (leave_bad_ == 0) return uniform_(rng_) < loss_;
        bad_ = bad_ ? uniform_(rng_) >= leave_bad_ : uniform_(rng_) < enter_bad_;
        return bad_;
    }

private:
    double loss_, leave_bad_ = 0, enter_bad_ = 0;
    bool bad_ = false;
    std::mt19937_64 rng_;
    std::uniform_real_distribution<double> uniform_{0.0, 1.0};
};

// The IPv4 destination of the packet after the virtio-net header, 0 if none.
std::uint32_t destination(const char* packet, std::size_t length) {
    if (length < kVirtioNetHeader + 20 || (static_cast<unsigned char>(packet[kVirtioNetHeader]) >> 4) != 4) return 0;
    std::uint32_t to = 0;
    std::memcpy(&to, packet + kVirtioNetHeader + 16, 4);
    return to;
}

int open_tun(const std::string& name, bool offload) {
    const int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    ifreq req{};
    req.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
    std::snprintf(req.ifr_name, IFNAMSIZ, "%s", name.c_str());
    // The header travels back unchanged with each packet, so the kernel keeps
    // its checksum and segmentation state.
    const unsigned offloads = offload ? TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 : 0;
    if (::ioctl(fd, TUNSETIFF, &req) != 0 || ::ioctl(fd, TUNSETOFFLOAD, offloads) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr, "delay_line: %s\nusage: delay_line --dev NAME --delay-ms MS [--max-mb MB] [--stats FILE] [--ready FILE] "
                 "[--loss P [--burst B] --loss-to ADDR [--seed N]]\n", why);
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    std::string dev, stats, ready, loss_to;
    double delay_ms = -1, max_mb = 512, loss = 0, burst = 0;
    unsigned seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        if (key == "--dev") dev = argv[i + 1];
        else if (key == "--delay-ms") delay_ms = std::atof(argv[i + 1]);
        else if (key == "--max-mb") max_mb = std::atof(argv[i + 1]);
        else if (key == "--stats") stats = argv[i + 1];
        else if (key == "--ready") ready = argv[i + 1];
        else if (key == "--loss") loss = std::atof(argv[i + 1]);
        else if (key == "--burst") burst = std::atof(argv[i + 1]);
        else if (key == "--loss-to") loss_to = argv[i + 1];
        else if (key == "--seed") seed = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
        else usage(("unknown option " + key).c_str());
    }
    if (dev.empty() || delay_ms < 0) usage("--dev and --delay-ms are needed");
    if (!(loss >= 0 && loss < 1) || (burst != 0 && burst < 1)) usage("--loss is a fraction below 1, --burst at least 1");
    in_addr lossy{};
    if (loss > 0 && ::inet_pton(AF_INET, loss_to.c_str(), &lossy) != 1) usage("--loss needs --loss-to IPV4ADDRESS");
    LossModel model(loss, burst, seed);
    const int fd = open_tun(dev, loss == 0);
    if (fd < 0) {
        std::fprintf(stderr, "delay_line: cannot create TUN device %s: %s\n", dev.c_str(), std::strerror(errno));
        return 1;
    }
    if (!ready.empty()) ::close(::open(ready.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    std::signal(SIGTERM, [](int) { stopping = 1; });
    std::signal(SIGINT, [](int) { stopping = 1; });

    const auto delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(delay_ms));
    const std::size_t limit = static_cast<std::size_t>(max_mb * (1 << 20));
    std::deque<Held> held;  // arrival order is due order: one delay for all
    std::vector<std::unique_ptr<char[]>> spare;  // buffers of sent packets, used again
    std::size_t held_bytes = 0, most_held = 0;
    unsigned long long packets = 0, bytes = 0, dropped = 0, lost = 0, lossy_packets = 0;
    while (!stopping) {
        auto now = Clock::now();
        while (!held.empty() && held.front().due <= now) {
            Held& h = held.front();
            if (::write(fd, h.bytes.get(), h.length) < 0) ++dropped;
            held_bytes -= h.length;
            spare.push_back(std::move(h.bytes));
            held.pop_front();
        }
        timespec wait{0, 200'000'000};
        if (!held.empty()) {
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(held.front().due - now).count();
            wait = timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
        }
        pollfd p{fd, POLLIN, 0};
        if (::ppoll(&p, 1, &wait, nullptr) <= 0) continue;
        const auto arrived = Clock::now();
        for (int n = 0; n < 256; ++n) {  // what is queued now, then look at the clock again
            std::unique_ptr<char[]> buf;
            if (spare.empty()) {
                buf.reset(new char[kMaxPacket]);
            } else {
                buf = std::move(spare.back());
                spare.pop_back();
            }
            const ssize_t got = ::read(fd, buf.get(), kMaxPacket);
            if (got <= 0) {
                spare.push_back(std::move(buf));
                break;
            }
            const auto length = static_cast<std::size_t>(got);
            if (loss > 0 && destination(buf.get(), length) == lossy.s_addr) {
                ++lossy_packets;
                if (model.lose()) {
                    ++lost;
                    spare.push_back(std::move(buf));
                    continue;
                }
            }
            if (held_bytes + length > limit) {
                ++dropped;
                spare.push_back(std::move(buf));
                continue;
            }
            held_bytes += length;
            ++packets;
            bytes += length;
            held.push_back(Held{arrived + delay, std::move(buf), length});
        }
        if (held_bytes > most_held) most_held = held_bytes;
    }
    if (!stats.empty()) {
        if (FILE* f = std::fopen(stats.c_str(), "w")) {
            std::fprintf(f,
                         "{\"packets\": %llu, \"bytes\": %llu, \"dropped_over_limit\": %llu, \"most_held_bytes\": %zu, "
                         "\"lossy_packets\": %llu, \"lost\": %llu}\n",
                         packets, bytes, dropped, most_held, lossy_packets, lost);
            std::fclose(f);
        }
    }
    return 0;
}
