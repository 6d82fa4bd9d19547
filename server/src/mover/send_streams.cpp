// The sending side's streams (the back end, Balman et al., 2012, section
// 5.3): each opened on its own thread, so that their round trips run side by
// side (or taken from those opened during the scan, early_streams.h), and
// while stream 0 sends the manifest, so that all of them carry
// blocks the moment the Have is in; the pool resized while the transfer
// runs; streams still opening shut down at once when the transfer stops.
#include "mover/send_transfer.h"

#include "mover/stream_io.h"

#include <nlohmann/json.hpp>
#include <sys/socket.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

namespace slabcast::mover {
using nlohmann::json;

UniqueFd SendTransfer::open_stream(int index, ClientHandshake& handshake, bool stoppable) {
    std::optional<EarlyStream> early = settings_.early ? settings_.early->take(index) : std::nullopt;
    UniqueFd fd = early ? std::move(early->fd) : connect_tcp(settings_.host, settings_.port, settings_.peer_timeout_s);
    if (stoppable && !opening_.add(fd.get())) throw std::runtime_error("the transfer stopped");
    const std::string hello = json{{"stream", index}, {"dest", settings_.dest}}.dump();
    try {
        if (early) handshake.send_hello(fd.get(), early->challenge, id_, hello);
        else handshake.send_hello(fd.get(), id_, hello, settings_.peer_timeout_s);
    } catch (...) {
        if (stoppable) opened(fd.get());  // before its descriptor closes, and its number is reused
        throw;
    }
    return fd;
}

void SendTransfer::opened(int fd) { opening_.remove(fd); }

// Streams still waiting for the server's challenge or proof would wait up to
// the peer timeout (a server that never answers them): their sockets are
// shut down, so that they give up at once.
void SendTransfer::stop_opening() {
    if (settings_.early) settings_.early->stop();
    opening_.stop();
}

bool SendTransfer::wait_for(const std::atomic<bool>& flag, const std::atomic<bool>* quit,
                            std::chrono::milliseconds limit) const {
    const auto start = std::chrono::steady_clock::now();
    const auto waited = [&] {  // in milliseconds: limit's max() as nanoseconds would overflow
        return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    };
    while (!flag) {
        if ((quit && *quit) || failed_ || waited() > limit) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

int SendTransfer::streams() const {
    std::lock_guard lock(pools_mutex_);
    return static_cast<int>(streams_.threads.size());
}

void SendTransfer::set_streams(int n) {
    std::vector<std::future<void>> connected;
    if (n == 0) stop_opening();
    {
        std::lock_guard lock(pools_mutex_);
        if (!ring_ && n > 0) return;  // not started: begin() opens settings_.streams (0: stop them all)
        connected = open_streams(n);
        // Stream 0 carries the manifest and the report: it stays, unless everything stops (n = 0).
        while (static_cast<int>(streams_.threads.size()) > std::max(n, 0) && (n == 0 || streams_.threads.size() > 1)) {
            *streams_.quit.back() = true;
            streams_.threads.back().join();
            streams_.threads.pop_back();
            streams_.quit.pop_back();
        }
    }
    // Returns once every new stream has said Hello, so that the server knows
    // it before the transfer can end (a stream arriving after it would be refused).
    for (auto& c : connected) c.wait();
}

// Under pools_mutex_. Each new stream connects on its own thread, so that
// they pay their round trips side by side, not one after another; each
// carries blocks once the ring is ready. The futures are ready once each has
// sent its Hello (or failed to).
std::vector<std::future<void>> SendTransfer::open_streams(int n) {
    std::vector<std::future<void>> connected;
    if (settings_.host.empty()) return connected;  // a pull: the receiving end opens streams
    while (static_cast<int>(streams_.threads.size()) < n) {
        const int index = static_cast<int>(streams_.threads.size());
        auto hello_sent = std::make_shared<std::promise<void>>();
        connected.push_back(hello_sent->get_future());
        streams_.quit.push_back(std::make_unique<std::atomic<bool>>(false));
        streams_.threads.emplace_back([this, index, hello_sent, quit = streams_.quit.back().get()] {
            ClientHandshake handshake(settings_.key, settings_.encrypt);
            UniqueFd fd;  // opened here, closed here, however the stream ends
            try {
                fd = open_stream(index, handshake, true);
            } catch (const std::exception& e) {
                hello_sent->set_value();
                return fail("opening stream " + std::to_string(index) + ": " + e.what());
            }
            hello_sent->set_value();
            try {  // before this stream carries a block (the others carry them meanwhile)
                handshake.expect_proof(fd.get(), settings_.peer_timeout_s);
            } catch (const std::exception& e) {
                opened(fd.get());
                return fail("stream " + std::to_string(index) + ": " + e.what());
            }
            opened(fd.get());
            if (!carrying_.add(fd.get())) return;  // the transfer failed meanwhile
            Channel channel = handshake.channel(fd.get());
            if (wait_for(ring_ready_, quit)) stream_loop(channel, quit, false);
            carrying_.remove(fd.get());  // before its descriptor closes, and its number is reused
        });
    }
    return connected;
}

}  // namespace slabcast::mover
