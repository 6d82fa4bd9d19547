// serve's front door: the accept loop, and the one place a connection is
// admitted. Connections are held without a thread until their Hello is whole
// (WaitingConnections, --max-waiting, --hello-timeout); read_hello() is the
// one place a Hello is authenticated and checked field by field; a valid one
// gets a thread within --max-connections, which then gives up on a peer
// silent for --idle-timeout (docs/mover.md, "Limits").
#include "mover/server.h"

#include "base/key_file.h"
#include "base/stop_signal.h"
#include "mover/peer_text.h"
#include "mover/stream_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace slabcast::mover {
namespace {

std::string to_text(const sockaddr_storage& a) {
    char host[NI_MAXHOST] = "?";
    ::getnameinfo(reinterpret_cast<const sockaddr*>(&a), sizeof a, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
    return host;
}

}  // namespace

Server::Server(const ServeOptions& o) : o_(o) {
    DestTree check(o.root);  // creates --root, or names why it cannot be used, before listening
    for (const auto& a : o.allow) allowed_.add_list(a);
    if (!o.key_file.empty()) key_ = load_sync_key(o.key_file);
    if (o.require_encryption && !key_)
        throw std::invalid_argument("--require-encryption needs --key-file (the session keys come from it)");
    // Beyond loopback, anyone who reaches the port could write into --root.
    if (!key_ && !o.insecure_no_auth && !is_loopback(o.listen))
        throw std::invalid_argument(
            "serve: listening on " + o.listen + " without --key-file would let anyone who reaches port " +
            std::to_string(o.port) + " write into " + o.root + ": give --key-file KEY (slabcast keygen KEY makes "
            "one; give the clients the same file), or --listen 127.0.0.1, or --insecure-no-auth to take "
            "transfers from anyone (--allow still limits them by address)");
    limits_.manifest_bytes = static_cast<std::uint64_t>(o.max_manifest_mb) << 20;
    limits_.entries = o.max_files;
    limits_.blocks = o.max_blocks;
    limits_.manifests =
        std::make_shared<ByteBudget>(limits_.manifest_bytes * static_cast<std::uint64_t>(o.max_transfers));
    check_descriptor_limit();
}

int Server::run() {
    const UniqueFd listener = listen_tcp(o_.listen, o_.port);
    // accept() without waiting: every queued connection is taken at each turn.
    ::fcntl(listener.get(), F_SETFL, ::fcntl(listener.get(), F_GETFL) | O_NONBLOCK);
    WaitingConnections waiting(static_cast<std::size_t>(o_.max_waiting), std::chrono::seconds(o_.hello_timeout_s),
                               kMaxHelloBytes);
    spdlog::info("serve: {} on {}:{}, {} MiB ring{}{}{}", o_.root, o_.listen, o_.port, o_.ring_mb,
                 o_.read_back ? fmt::format(", {} writers read finished files back", o_.writers) : "",
                 allowed_.empty() ? " (any client: --allow limits who may write here)" : "",
                 key_ ? (o_.require_encryption ? ", clients must hold the key and encrypt"
                                               : ", clients must hold the key")
                      : ", no key: clients are not authenticated");
    if (!key_ && !is_loopback(o_.listen))
        spdlog::warn("serve: --insecure-no-auth: anyone who reaches port {} may write into {}", o_.port, o_.root);
    auto tuned = std::chrono::steady_clock::now();
    while (!stop_requested() && !(o_.once && served_once())) {
        std::vector<pollfd> polled{{listener.get(), POLLIN, 0}};
        waiting.poll_set(polled);
        if (::poll(polled.data(), polled.size(), waiting.wait_ms(200)) < 0 && errno != EINTR)
            throw std::runtime_error(std::string("serve: poll: ") + std::strerror(errno));
        if (polled[0].revents & POLLIN) accept_all(listener.get(), waiting);
        for (Arrival& a : waiting.service(polled)) admit(std::move(a), waiting);
        reap();
        if (std::chrono::steady_clock::now() - tuned > std::chrono::milliseconds(200)) {
            retune();
            tuned = std::chrono::steady_clock::now();
        }
    }
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, t] : transfers_) t->abort("the server is stopping");
    }
    for (auto& t : threads_) t.thread.join();
    return failures_ ? 1 : 0;
}

// The descriptors the limits allow at once, against RLIMIT_NOFILE (its
// soft limit raised to the hard one first): a server that runs out of
// descriptors refuses everyone, so say so when it starts.
void Server::check_descriptor_limit() const {
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
    if (r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &r);
    }
    const std::uint64_t need = static_cast<std::uint64_t>(o_.max_waiting) + o_.max_connections +
                               static_cast<std::uint64_t>(o_.max_transfers) *
                                   (ReceiveTransfer::kOpenPartFiles + DestTree::kCachedDirs + 4) + 64;
    if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < need)
        spdlog::warn("serve: the limits allow {} descriptors at once, the process may open {} (ulimit -n): "
                     "raise it, or lower --max-transfers, --max-connections or --max-waiting", need, r.rlim_cur);
}

// Takes every connection waiting in the backlog (a bounded number per
// turn), sends each its challenge (auth.h), and holds it without a thread
// until its Hello is whole.
void Server::accept_all(int listener, WaitingConnections& waiting) {
    for (int n = 0; n < 256; ++n) {
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        UniqueFd fd(::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC));
        if (fd.get() < 0) {
            if (errno == EMFILE || errno == ENFILE) {  // the backlog waits; do not spin on it
                spdlog::warn("serve: out of descriptors, connections wait: {}", std::strerror(errno));
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            return;
        }
        const std::string from = to_text(peer);
        if (!allowed_.empty() && !allowed_.allows(peer)) {
            spdlog::warn("serve: refused a connection from {} (not in --allow)", from);
            continue;
        }
        tune_tcp(fd.get(), o_.peer_timeout_s);
        auto handshake = std::make_shared<ServerHandshake>(key_, o_.require_encryption);
        try {
            // First on every connection (mover/auth.h), with how long its Hello may take.
            handshake->send_challenge(fd.get(), static_cast<std::uint64_t>(o_.hello_timeout_s) * 1000);
        } catch (const std::exception& e) {
            spdlog::warn("serve: a connection from {} dropped: {}", from, e.what());
            continue;
        }
        waiting.add(std::move(fd), from, handshake);
    }
}

// The one place a connection is admitted: its Hello, authenticated (the
// handshake checks the MAC and sends the proof) and checked field by field.
Hello Server::read_hello(Arrival& a) const {
    auto& handshake = *std::static_pointer_cast<ServerHandshake>(a.context);
    return parse_hello(a.hello.transfer, handshake.accept_hello(a.fd.get(), a.hello, a.payload));
}

// A valid Hello gets a thread, within --max-connections; the stream then
// gives up on a peer that sends (or takes) nothing for --idle-timeout.
void Server::admit(Arrival a, WaitingConnections& waiting) {
    reap();  // threads that have ended do not count
    Hello hello;
    try {
        hello = read_hello(a);
    } catch (const AuthError& e) {
        spdlog::warn("serve: refused a client from {}: {}", a.from, e.what());
        return waiting.refuse(std::move(a.fd), a.from, e.what());
    } catch (const std::exception& e) {  // may quote the Hello: printable text only
        const std::string why = printable(e.what());
        spdlog::warn("serve: a connection from {} refused: {}", a.from, why);
        return waiting.refuse(std::move(a.fd), a.from, why);
    }
    std::lock_guard lock(mutex_);
    if (threads_.size() >= static_cast<std::size_t>(o_.max_connections)) {
        const std::string why =
            fmt::format("{} connections are open, the limit (serve --max-connections)", threads_.size());
        spdlog::warn("serve: a connection from {} refused: {}", a.from, why);
        return waiting.refuse(std::move(a.fd), a.from, why);
    }
    const timeval idle{o_.idle_timeout_s, 0};
    ::setsockopt(a.fd.get(), SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
    ::setsockopt(a.fd.get(), SOL_SOCKET, SO_SNDTIMEO, &idle, sizeof idle);
    auto done = std::make_shared<std::atomic<bool>>(false);
    // From here on the stream is read and written through its channel: sealed if the Hello asked.
    Channel channel = std::static_pointer_cast<ServerHandshake>(a.context)->channel(a.fd.get());
    threads_.push_back({std::thread([this, fd = std::move(a.fd), channel = std::move(channel), hello,
                                     from = a.from, done]() mutable {
                            serve_stream(channel, hello, from);
                            fd.reset();
                            *done = true;
                        }),
                        done});
}

// Joins the threads of streams that have ended: a server that runs for
// months sees many connections.
void Server::reap() {
    std::lock_guard lock(mutex_);
    for (auto it = threads_.begin(); it != threads_.end();) {
        if (*it->done) {
            it->thread.join();
            it = threads_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace slabcast::mover
