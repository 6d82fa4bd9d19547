// serve's dispatch: an admitted stream goes to its transfer. Stream 0 of a
// transfer in starts it (within --max-transfers-per-address) and the others
// join it by its id; it counts against --max-transfers only once its manifest
// has arrived, within --peer-timeout of the Hello: a client that says Hello
// and nothing more (stalled, crashed or hostile) holds no slot a real
// transfer needs. A Hello asking for files starts a pull, whose streams the
// client opens and which are handed to it here. A stream that cannot be
// served is told why before it is closed.
#include "mover/server.h"

#include "mover/manifest.h"
#include "mover/peer_text.h"
#include "mover/stream_io.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace slabcast::mover {
namespace {

// How long a stream of a transfer not known yet waits for its stream 0.
constexpr int kStreamZeroWait_s = 5;

// Reads and drops what the peer still sends until it closes (or its
// receive timeout, or 1 MiB): closing with unread data would reset the
// connection under the peer's last frames.
void until_closed(int fd) {
    char scratch[4096];
    for (int i = 0; i < 256 && ::recv(fd, scratch, sizeof scratch, 0) > 0; ++i) {
    }
}

// Tells the client why its stream ends, if it is still there to hear it,
// and lets what it still sends drain for a moment first: a close with
// unread data would reset the connection before it read why.
void refuse(Channel& c, const std::string& why) {
    try {
        write_frame(c, Frame{Kind::Error}, why.data(), why.size());
    } catch (const std::exception&) {
    }
    const int fd = c.fd();
    ::shutdown(fd, SHUT_WR);
    const timeval second{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
    until_closed(fd);
}

}  // namespace

void Server::serve_stream(Channel& c, const Hello& h, const std::string& from) {
    try {
        if (!h.get.empty()) {
            serve_pull(c, h, from);
            return;
        }
        if (h.stream > 0) {
            std::shared_ptr<SendTransfer> pull;
            {
                std::lock_guard lock(mutex_);
                if (auto it = pulls_.find(h.transfer); it != pulls_.end()) pull = it->second;
            }
            if (pull) {
                pull->add_stream(c);
                return;
            }
        }
        std::shared_ptr<ReceiveTransfer> t;
        {
            std::unique_lock lock(mutex_);
            auto it = transfers_.find(h.transfer);
            if (h.stream > 0 && it == transfers_.end()) {
                // The sender opens its other streams right behind stream 0's
                // Hello: one may be dispatched before stream 0 is. It waits a
                // moment for it, not for a transfer that never comes.
                transfer_started_.wait_for(lock, std::chrono::seconds(kStreamZeroWait_s),
                                           [&] { return (it = transfers_.find(h.transfer)) != transfers_.end(); });
            }
            if (h.stream == 0) {
                if (it != transfers_.end() || pulls_.count(h.transfer))
                    throw std::runtime_error("a transfer with this id is running");
                check_address_limit(from);
                ReceiveSettings s{writers_now_ ? writers_now_ : o_.writers,
                                  static_cast<std::size_t>(o_.ring_mb) << 20, o_.read_back, "serve", limits_};
                s.peer = from;
                s.manifest_timeout_s = o_.peer_timeout_s;
                s.manifest_taken = [this, id = h.transfer] { count_transfer(id); };
                t = std::make_shared<ReceiveTransfer>(h.transfer, o_.root, h.dest, s);
                transfers_[h.transfer] = t;
                client_of_[h.transfer] = from;
                transfer_started_.notify_all();
            } else {
                if (it == transfers_.end()) throw std::runtime_error("a stream of an unknown transfer");
                t = it->second;
            }
        }
        if (h.stream == 0) {
            t->run_first_stream(c);
            // The client closes stream 0 once all its streams have ended:
            // until then the transfer stays known, so that a stream that
            // reaches serve after the end still finds it.
            until_closed(c.fd());
            std::lock_guard lock(mutex_);
            forget_transfer(h.transfer);
            ++completed_;
            failures_ += !t->succeeded();
        } else {
            t->run_stream(c);
            until_closed(c.fd());  // a stream that came after the end: its Bye is read, not reset
        }
    } catch (const std::exception& e) {
        const std::string why = printable(e.what());  // it may quote the client (a pull's report)
        spdlog::warn("serve: a connection from {} dropped: {}", from, why);
        refuse(c, why);
    }
}

void Server::check_transfer_limit() const {
    const std::size_t running = counted_.size() + pulls_.size();
    if (running >= static_cast<std::size_t>(o_.max_transfers))
        throw std::runtime_error(fmt::format("{} transfers are running, the limit (serve --max-transfers)", running));
}

// Transfers waiting for their manifest count here too: one address cannot
// hold every thread with Hellos that are never followed.
void Server::check_address_limit(const std::string& from) const {
    const auto open =
        std::count_if(client_of_.begin(), client_of_.end(), [&](const auto& e) { return e.second == from; });
    if (open >= o_.max_transfers_per_address)
        throw std::runtime_error(fmt::format("{} transfers from {} are open, the limit (serve "
                                             "--max-transfers-per-address)", open, from));
}

// Called by the transfer's stream 0 once the manifest is whole; what it
// throws stops the transfer and is told to the client.
void Server::count_transfer(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    check_transfer_limit();
    counted_.insert(id);
}

void Server::forget_transfer(std::uint64_t id) {
    transfers_.erase(id);
    pulls_.erase(id);
    client_of_.erase(id);
    counted_.erase(id);
}

// A pull (`slabcast stage --from`): the client asked for files on stream 0;
// they go back over the streams it opens, as `slabcast move` would send
// them. Everything is listed and read through descriptors beneath --root
// (scan_beneath): a symbolic link swapped in meanwhile leads nowhere.
void Server::serve_pull(Channel& c, const Hello& h, const std::string& from) {
    if (!o_.allow_pull) throw std::runtime_error("this server does not give files out (start it with --allow-pull)");
    Manifest manifest = scan_beneath(std::make_shared<DestTree>(o_.root), h.get, kDefaultBlock, limits_.entries);
    SendSettings s;
    s.readers = 2;
    s.ring_bytes = static_cast<std::size_t>(o_.ring_mb) << 20;
    s.peer_timeout_s = o_.peer_timeout_s;
    s.transfer_id = h.transfer;
    s.answer_timeout_s = o_.idle_timeout_s;
    auto t = std::make_shared<SendTransfer>(std::move(manifest), s);
    {
        std::lock_guard lock(mutex_);
        if (pulls_.count(h.transfer) || transfers_.count(h.transfer))
            throw std::runtime_error("a transfer with this id is running");
        check_transfer_limit();
        check_address_limit(from);
        pulls_[h.transfer] = t;
        client_of_[h.transfer] = from;
    }
    try {
        t->start_on(c);
        const std::string report = t->finish();
        // The report is the puller's own text: logged as printable text only.
        spdlog::info("serve: pull {:016x} of {} done{}: {}", h.transfer, nlohmann::json(h.get).dump(),
                     c.cipher() == Cipher::None ? "" : fmt::format(", encrypted ({})", to_string(c.cipher())),
                     printable(report));
        // As with a move: known until the client closes stream 0, so that a
        // stream it opened as the pull ended is told goodbye at once. Forgotten
        // here, that stream waited kStreamZeroWait_s for a move of the same id,
        // and the client's pull with it.
        until_closed(c.fd());
    } catch (...) {
        std::lock_guard lock(mutex_);
        forget_transfer(h.transfer);
        throw;
    }
    std::lock_guard lock(mutex_);
    forget_transfer(h.transfer);
}

bool Server::served_once() {
    std::lock_guard lock(mutex_);
    return completed_ > 0 && transfers_.empty();
}

// --tune-file: "writers=N" changes the writer pool of running and later transfers.
void Server::retune() {
    if (o_.tune_file.empty()) return;
    std::ifstream in(o_.tune_file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("writers=", 0) != 0) continue;
        const int n = std::atoi(line.c_str() + 8);
        if (n < 1 || n > 256 || n == writers_now_) continue;
        writers_now_ = n;
        spdlog::info("serve: {} writer threads per transfer from now", n);
        std::lock_guard lock(mutex_);
        for (auto& [id, t] : transfers_) t->set_writers(n);
    }
}

}  // namespace slabcast::mover
