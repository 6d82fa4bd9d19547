// `slabcast serve`: the receiving end of the data mover (docs/mover.md). One
// TCP port; every transfer arrives over one or more streams that name it in
// their Hello, and goes into a directory beneath --root.
//
// Connections are held without a thread until their Hello is whole and valid
// (WaitingConnections, --max-waiting, --hello-timeout); read_hello() is the
// one place a Hello is authenticated and checked; a thread then serves the
// stream, within --max-connections and --max-transfers, and gives up on a
// peer silent for --idle-timeout. What one transfer may ask of the host is
// ReceiveLimits (docs/mover.md, "Limits").
#include "host/address_filter.h"
#include "host/key_file.h"
#include "host/roles.h"
#include "host/stop_signal.h"
#include "mover/auth.h"
#include "mover/hello.h"
#include "mover/manifest.h"
#include "mover/peer_text.h"
#include "mover/receive_transfer.h"
#include "mover/send_transfer.h"
#include "mover/stream_io.h"
#include "mover/waiting_connections.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace slabcast {
namespace {
using namespace mover;

struct ServeOptions {
    std::string root;
    std::string listen = "0.0.0.0";
    int port = 7100;
    int writers = 4;
    int ring_mb = 256;
    std::vector<std::string> allow;
    std::string tune_file;
    bool once = false;
    bool read_back = false;
    int peer_timeout_s = 60;
    bool allow_pull = false;
    std::string key_file;
    bool insecure_no_auth = false;
    bool require_encryption = false;
    // Limits (docs/mover.md, "Limits"), each range-checked by its flag.
    int max_manifest_mb = 64;
    std::uint64_t max_files = 1'000'000;
    std::uint64_t max_blocks = std::uint64_t{1} << 24;
    int max_connections = 256;
    int max_transfers = 16;
    int max_waiting = 64;
    int hello_timeout_s = 10;
    int idle_timeout_s = 300;
};

class Server {
public:
    explicit Server(const ServeOptions& o) : o_(o) {
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
        check_descriptor_limit();
    }

    int run() {
        const UniqueFd listener = listen_tcp(o_.listen, o_.port);
        // accept() without waiting: every queued connection is taken at each turn.
        ::fcntl(listener.get(), F_SETFL, ::fcntl(listener.get(), F_GETFL) | O_NONBLOCK);
        WaitingConnections waiting(static_cast<std::size_t>(o_.max_waiting), std::chrono::seconds(o_.hello_timeout_s),
                                   kMaxHelloBytes);
        spdlog::info("serve: {} on {}:{}, {} writers, {} MiB ring{}{}", o_.root, o_.listen, o_.port, o_.writers,
                     o_.ring_mb, allowed_.empty() ? " (any client: --allow limits who may write here)" : "",
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

private:
    static std::string to_text(const sockaddr_storage& a) {
        char host[NI_MAXHOST] = "?";
        ::getnameinfo(reinterpret_cast<const sockaddr*>(&a), sizeof a, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
        return host;
    }

    // The descriptors the limits allow at once, against RLIMIT_NOFILE (its
    // soft limit raised to the hard one first): a server that runs out of
    // descriptors refuses everyone, so say so when it starts.
    void check_descriptor_limit() const {
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
    void accept_all(int listener, WaitingConnections& waiting) {
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
                handshake->send_challenge(fd.get());  // first on every connection (mover/auth.h)
            } catch (const std::exception& e) {
                spdlog::warn("serve: a connection from {} dropped: {}", from, e.what());
                continue;
            }
            waiting.add(std::move(fd), from, handshake);
        }
    }

    // The one place a connection is admitted: its Hello, authenticated (the
    // handshake checks the MAC and sends the proof) and checked field by field.
    Hello read_hello(Arrival& a) const {
        auto& handshake = *std::static_pointer_cast<ServerHandshake>(a.context);
        return parse_hello(a.hello.transfer, handshake.accept_hello(a.fd.get(), a.hello, a.payload));
    }

    // A valid Hello gets a thread, within --max-connections; the stream then
    // gives up on a peer that sends (or takes) nothing for --idle-timeout.
    void admit(Arrival a, WaitingConnections& waiting) {
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
    void reap() {
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

    bool served_once() {
        std::lock_guard lock(mutex_);
        return completed_ > 0 && transfers_.empty();
    }

    // --tune-file: "writers=N" changes the writer pool of running and later transfers.
    void retune() {
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

    void serve_stream(Channel& c, const Hello& h, const std::string& from) {
        try {
            if (!h.get.empty()) {
                serve_pull(c, h);
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
                std::lock_guard lock(mutex_);
                auto it = transfers_.find(h.transfer);
                if (h.stream == 0) {
                    if (it != transfers_.end()) throw std::runtime_error("a transfer with this id is running");
                    check_transfer_limit();
                    const ReceiveSettings s{writers_now_ ? writers_now_ : o_.writers,
                                            static_cast<std::size_t>(o_.ring_mb) << 20, o_.read_back, "serve",
                                            limits_};
                    t = std::make_shared<ReceiveTransfer>(h.transfer, o_.root, h.dest, s);
                    transfers_[h.transfer] = t;
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
                transfers_.erase(h.transfer);
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

    // Under mutex_.
    void check_transfer_limit() const {
        const std::size_t running = transfers_.size() + pulls_.size();
        if (running >= static_cast<std::size_t>(o_.max_transfers))
            throw std::runtime_error(fmt::format("{} transfers are running, the limit (serve --max-transfers)", running));
    }

    // Tells the client why its stream ends, if it is still there to hear it,
    // and lets what it still sends drain for a moment first: a close with
    // unread data would reset the connection before it read why.
    static void refuse(Channel& c, const std::string& why) {
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

    // Reads and drops what the peer still sends until it closes (or its
    // receive timeout, or 1 MiB): closing with unread data would reset the
    // connection under the peer's last frames.
    static void until_closed(int fd) {
        char scratch[4096];
        for (int i = 0; i < 256 && ::recv(fd, scratch, sizeof scratch, 0) > 0; ++i) {
        }
    }

    // A pull (`slabcast stage --from`): the client asked for files on stream 0;
    // they go back over the streams it opens, as `slabcast move` would send
    // them. Everything is listed and read through descriptors beneath --root
    // (scan_beneath): a symbolic link swapped in meanwhile leads nowhere.
    void serve_pull(Channel& c, const Hello& h) {
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
            pulls_[h.transfer] = t;
        }
        try {
            t->start_on(c);
            const std::string report = t->finish();
            // The report is the puller's own text: logged as printable text only.
            spdlog::info("serve: pull {:016x} of {} done{}: {}", h.transfer, nlohmann::json(h.get).dump(),
                         c.cipher() == Cipher::None ? "" : fmt::format(", encrypted ({})", to_string(c.cipher())),
                         printable(report));
        } catch (...) {
            std::lock_guard lock(mutex_);
            pulls_.erase(h.transfer);
            throw;
        }
        std::lock_guard lock(mutex_);
        pulls_.erase(h.transfer);
    }

    const ServeOptions& o_;
    AddressFilter allowed_;
    std::optional<Key> key_;
    ReceiveLimits limits_;
    std::mutex mutex_;
    std::map<std::uint64_t, std::shared_ptr<ReceiveTransfer>> transfers_;
    std::map<std::uint64_t, std::shared_ptr<SendTransfer>> pulls_;
    struct StreamThread {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::vector<StreamThread> threads_;
    int writers_now_ = 0;
    int completed_ = 0, failures_ = 0;
};

}  // namespace

void register_serve(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<ServeOptions>();
    CLI::App* c = root.add_subcommand("serve", "data mover, receiving end: files from `slabcast move` into --root");
    c->add_option("--root", o->root, "directory that transfers go into (created if missing)")->required();
    c->add_option("--listen", o->listen, "address to listen on")->capture_default_str();
    c->add_option("--port", o->port, "TCP port")->check(CLI::Range(1, 65535))->capture_default_str();
    c->add_option("--writers", o->writers, "front-end threads writing blocks, per transfer")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    c->add_option("--ring-mb", o->ring_mb, "block cache per transfer, MiB")
        ->check(CLI::Range(16, 65536))
        ->capture_default_str();
    c->add_option("--allow", o->allow, "clients to accept: CIDR[,CIDR...] (default: any, with a warning)");
    c->add_option("--tune-file", o->tune_file, "file with a line writers=N, re-read every 0.2 s while running");
    c->add_flag("--read-back", o->read_back,
                "read each finished file back and check every block against its checksum before it goes into place");
    c->add_option("--peer-timeout", o->peer_timeout_s,
                  "seconds without an answer from a client (path cut, host down) before its transfer stops")
        ->check(CLI::Range(2, 3600))
        ->capture_default_str();
    c->add_flag("--allow-pull", o->allow_pull,
                "also give files beneath --root out to clients that ask (slabcast stage --from); --allow limits who");
    c->add_flag("--once", o->once, "exit after the first transfer (exit code 1 if it failed)");
    c->add_option("--key-file", o->key_file,
                  "key (slabcast keygen) that every client must prove it holds, as this server proves it to them; "
                  "required unless --listen is a loopback address");
    c->add_flag("--require-encryption", o->require_encryption,
                "refuse clients that do not encrypt their streams (move --encrypt; clients with the key follow)");
    c->add_flag("--insecure-no-auth", o->insecure_no_auth,
                "listen beyond loopback without --key-file: any client that reaches the port may write into --root");
    // Limits (docs/mover.md, "Limits").
    c->add_option("--max-manifest-mb", o->max_manifest_mb, "largest manifest (the list of names) a transfer may send, MiB")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    c->add_option("--max-files", o->max_files, "files and directories one transfer may list")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100'000'000}))
        ->capture_default_str();
    c->add_option("--max-blocks", o->max_blocks,
                  "blocks one transfer may declare (8 bytes of bookkeeping each, once its file begins to arrive)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
        ->capture_default_str();
    c->add_option("--max-connections", o->max_connections, "streams served at once (a thread each), all transfers together")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    c->add_option("--max-transfers", o->max_transfers, "transfers (in, and pulls out) at once")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    c->add_option("--max-waiting", o->max_waiting,
                  "connections held until their Hello (no thread each); beyond it the oldest of the address "
                  "holding the most is closed")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    c->add_option("--hello-timeout", o->hello_timeout_s, "seconds a new connection has to send its Hello")
        ->check(CLI::Range(1, 600))
        ->capture_default_str();
    c->add_option("--idle-timeout", o->idle_timeout_s,
                  "seconds a stream may send (or take) nothing before it is dropped, after its Hello")
        ->check(CLI::Range(2, 86400))
        ->capture_default_str();
    c->callback([o, &run] { run = [o] { return Server(*o).run(); }; });
}

}  // namespace slabcast
