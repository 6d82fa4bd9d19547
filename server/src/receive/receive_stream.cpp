#include "receive/receive_stream.h"

#include "base/numa_placement.h"
#include "base/stop_signal.h"
#include "receive/batch_receiver.h"

#include "slabcast/clock.h"
#include "slabcast/fec_report.h"
#include "slabcast/units.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

namespace slabcast {

StreamSpec parse_stream(const std::string& text) {
    const auto colon = text.find(':');
    const auto slab = parse_whole(text.substr(0, colon), INT_MIN, INT_MAX);
    const auto port = colon == std::string::npos ? std::nullopt : parse_whole(text.substr(colon + 1), INT_MIN, INT_MAX);
    if (!slab || !port) throw std::invalid_argument("--stream '" + text + "': expected SLAB:PORT, e.g. 0:9000");
    if (*port < 1 || *port > 65535) throw std::invalid_argument("--stream '" + text + "': port must be 1..65535");
    return {static_cast<int>(*slab), static_cast<int>(*port)};
}

namespace {

// The groups' loss so far, back to their sender, whose parity may follow it.
// Best effort: a report lost is made up by the next (its totals run on).
bool send_fec_report(Stream& s, const sockaddr_storage& to) {
    std::uint8_t bytes[fec::kReportBytes];
    const fec::ReceiverCounts& c = s.fec->counts();
    fec::write_report(bytes, fec::Report{s.spec.slab, c.group_datagrams, c.group_lost, c.groups, c.group_lost_squares});
    const socklen_t length = to.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    return ::sendto(s.socket.fd(), bytes, sizeof bytes, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&to),
                    length) == static_cast<ssize_t>(sizeof bytes);
}

void post_fec_counts(const fec::ReceiverCounts& c, SlabLive& live) {
    live.fec_data.store(c.data, std::memory_order_relaxed);
    live.fec_parity.store(c.parity, std::memory_order_relaxed);
    live.fec_repaired.store(c.repaired, std::memory_order_relaxed);
    live.fec_unrepaired.store(c.unrepaired, std::memory_order_relaxed);
    live.fec_malformed.store(c.malformed, std::memory_order_relaxed);
}

}  // namespace

void receive_loop(Stream& s, int batch, bool gro, bool land) {
    try {
        pin_current_thread(s.cpu);
    } catch (const std::exception& e) {
        spdlog::error("stream {}: {}", s.spec.slab, e.what());
        request_stop();
        return;
    }
    BatchReceiver receiver(batch, gro);
    if (!s.allowed.empty()) receiver.set_filter(&s.allowed);
    if (land) receiver.set_landing(s.receiver.get());
    SlabLive& live = s.slab.header_rw().live;
    live.foreign.store(0);  // this receiver's own count, as for the other traffic counters
    std::int64_t now = 0;
    sockaddr_storage fec_sender{};  // where the stream's FEC datagrams come from (ss_family 0: none yet)
    std::uint64_t reported = live.publications.load();
    const fec::GroupReceiver::Deliver deliver = [&](const std::uint8_t* datagram, std::size_t length) {
        s.receiver->handle(datagram, length, now);
    };
    while (!stop_requested()) {
        now = 0;
        const sockaddr_storage* fec_from = nullptr;  // this batch's last FEC datagram's sender
        const long bytes = receiver.receive(s.socket.fd(), [&](const Datagram& d) {
            if (now == 0) now = monotonic_ns();  // one clock read per batch
            // (A datagram that landed is a run packet: its header said so.)
            if (s.fec && !d.landed && fec::is_fec(d.data, d.length)) {
                if (d.from) fec_from = d.from;
                const std::uint64_t repaired = s.fec->counts().repaired;
                s.fec->accept(d.data, d.length, deliver);
                s.receiver->count_repaired(s.fec->counts().repaired - repaired);
                return;
            }
            s.receiver->handle(d.data, d.length, now, d.landed);
        });
        if (bytes < 0) {
            spdlog::error("stream {}: recvmmsg: {}", s.spec.slab, std::strerror(errno));
            break;
        }
        s.receiver->tick(now ? now : monotonic_ns());  // step timeout, ghost plane handed over
        if (bytes == 0) continue;
        s.receiver->post_counters();
        live.foreign.store(receiver.foreign(), std::memory_order_relaxed);
        if (s.fec) post_fec_counts(s.fec->counts(), live);
        if (fec_from) fec_sender = *fec_from;  // once a batch, while the receiver's buffer still holds it
        const std::uint64_t published = live.publications.load(std::memory_order_relaxed);
        if (s.fec && fec_sender.ss_family != 0 && published != reported) {
            reported = published;
            if (send_fec_report(s, fec_sender)) s.counters.fec_reports.fetch_add(1, std::memory_order_relaxed);
        }
        s.counters.bytes.fetch_add(static_cast<std::uint64_t>(bytes), std::memory_order_relaxed);
        s.counters.landed.store(receiver.landed(), std::memory_order_relaxed);
        s.counters.copied_out.store(receiver.copied_out(), std::memory_order_relaxed);
    }
}

}  // namespace slabcast
