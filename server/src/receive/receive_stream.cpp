#include "receive/receive_stream.h"

#include "base/numa_placement.h"
#include "base/stop_signal.h"
#include "receive/batch_receiver.h"

#include "slabcast/clock.h"
#include "slabcast/units.h"

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
    while (!stop_requested()) {
        std::int64_t now = 0;
        const long bytes = receiver.receive(s.socket.fd(), [&](const Datagram& d) {
            if (now == 0) now = monotonic_ns();  // one clock read per batch
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
        s.counters.bytes.fetch_add(static_cast<std::uint64_t>(bytes), std::memory_order_relaxed);
        s.counters.landed.store(receiver.landed(), std::memory_order_relaxed);
        s.counters.copied_out.store(receiver.copied_out(), std::memory_order_relaxed);
    }
}

}  // namespace slabcast
