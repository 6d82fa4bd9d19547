// `slabcast serve`: the receiving end of the data mover (docs/mover.md). One
// TCP port; every transfer arrives over one or more streams that name it in
// their Hello, and goes into a directory beneath --root.
#include "address_filter.h"
#include "key_file.h"
#include "mover/auth.h"
#include "mover/manifest.h"
#include "mover/receive_transfer.h"
#include "mover/send_transfer.h"
#include "mover/stream_io.h"
#include "roles.h"
#include "slabcast/json_file.h"
#include "stop_signal.h"

#include <nlohmann/json.hpp>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <atomic>
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
};

class Server {
public:
    explicit Server(const ServeOptions& o) : o_(o) {
        DestTree check(o.root);  // creates --root, or names why it cannot be used, before listening
        for (const auto& a : o.allow) allowed_.add_list(a);
        if (o.writers < 1 || o.writers > 256) throw std::invalid_argument("--writers must be 1..256");
        if (o.ring_mb < 16) throw std::invalid_argument("--ring-mb must be >= 16");
        if (!o.key_file.empty()) key_ = load_sync_key(o.key_file);
        // Beyond loopback, anyone who reaches the port could write into --root.
        if (!key_ && !o.insecure_no_auth && !is_loopback(o.listen))
            throw std::invalid_argument(
                "serve: listening on " + o.listen + " without --key-file would let anyone who reaches port " +
                std::to_string(o.port) + " write into " + o.root + ": give --key-file KEY (slabcast keygen KEY makes "
                "one; give the clients the same file), or --listen 127.0.0.1, or --insecure-no-auth to take "
                "transfers from anyone (--allow still limits them by address)");
    }

    int run() {
        Fd listener(listen_tcp(o_.listen, o_.port));
        spdlog::info("serve: {} on {}:{}, {} writers, {} MiB ring{}{}", o_.root, o_.listen, o_.port, o_.writers,
                     o_.ring_mb, allowed_.empty() ? " (any client: --allow limits who may write here)" : "",
                     key_ ? ", clients must hold the key" : ", no key: clients are not authenticated");
        if (!key_ && !is_loopback(o_.listen))
            spdlog::warn("serve: --insecure-no-auth: anyone who reaches port {} may write into {}", o_.port, o_.root);
        while (!stop_requested() && !(o_.once && served_once())) {
            pollfd p{listener.get(), POLLIN, 0};
            if (::poll(&p, 1, 200) <= 0) {
                retune();
                continue;
            }
            sockaddr_storage peer{};
            socklen_t len = sizeof peer;
            const int fd = ::accept4(listener.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
            if (fd < 0) continue;
            if (!allowed_.empty() && !allowed_.allows(peer)) {
                spdlog::warn("serve: refused a connection from {} (not in --allow)", to_text(peer));
                ::close(fd);
                continue;
            }
            tune_tcp(fd, o_.peer_timeout_s);
            auto handshake = std::make_shared<ServerHandshake>(key_);
            try {
                handshake->send_challenge(fd);  // first on every connection (mover/auth.h)
            } catch (const std::exception& e) {
                spdlog::warn("serve: a connection from {} dropped: {}", to_text(peer), e.what());
                ::close(fd);
                continue;
            }
            reap();
            std::lock_guard lock(mutex_);
            auto done = std::make_shared<std::atomic<bool>>(false);
            threads_.push_back({std::thread([this, fd, done, handshake, from = to_text(peer)] {
                                    serve_stream(fd, *handshake, from);
                                    *done = true;
                                }),
                                done});
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

    void serve_stream(int raw, ServerHandshake& handshake, const std::string& from) {
        Fd fd(raw);
        try {
            timeval hello_wait{10, 0}, none{0, 0};
            ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &hello_wait, sizeof hello_wait);
            Frame f;
            std::string payload;
            if (!read_frame(fd.get(), f, payload, 64 << 10) || f.kind != Kind::Hello)
                throw std::runtime_error("expected a Hello frame");
            ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
            const auto hello = nlohmann::json::parse(handshake.accept_hello(fd.get(), f, payload));
            const int stream = json_file::field<int>(hello, "stream", "the Hello");
            if (stream < 0 || stream > 127) throw std::runtime_error("the Hello names stream " + std::to_string(stream));
            if (hello.contains("get")) {
                serve_pull(fd.get(), f.transfer, hello.at("get"));
                return;
            }
            if (stream > 0) {
                std::shared_ptr<SendTransfer> pull;
                {
                    std::lock_guard lock(mutex_);
                    if (auto it = pulls_.find(f.transfer); it != pulls_.end()) pull = it->second;
                }
                if (pull) {
                    pull->add_stream(fd.get());
                    return;
                }
            }
            std::string dest = hello.value("dest", std::string());
            while (!dest.empty() && dest.back() == '/') dest.pop_back();
            if (!dest.empty() && dest != ".") check_relative_path(dest);
            else dest.clear();
            std::shared_ptr<ReceiveTransfer> t;
            {
                std::lock_guard lock(mutex_);
                auto it = transfers_.find(f.transfer);
                if (stream == 0) {
                    if (it != transfers_.end()) throw std::runtime_error("a transfer with this id is running");
                    ReceiveSettings s{writers_now_ ? writers_now_ : o_.writers,
                                      static_cast<std::size_t>(o_.ring_mb) << 20, o_.read_back};
                    t = std::make_shared<ReceiveTransfer>(f.transfer, o_.root, dest, s);
                    transfers_[f.transfer] = t;
                } else {
                    if (it == transfers_.end()) throw std::runtime_error("a stream of an unknown transfer");
                    t = it->second;
                }
            }
            if (stream == 0) {
                t->run_first_stream(fd.get());
                std::lock_guard lock(mutex_);
                transfers_.erase(f.transfer);
                ++completed_;
                failures_ += !t->succeeded();
            } else {
                t->run_stream(fd.get());
            }
        } catch (const AuthError& e) {
            spdlog::warn("serve: refused a client from {}: {}", from, e.what());
            refuse(fd.get(), e.what());
        } catch (const std::exception& e) {
            spdlog::warn("serve: a connection from {} dropped: {}", from, e.what());
            refuse(fd.get(), e.what());
        }
    }

    // Tells the client why its stream ends, if it is still there to hear it.
    static void refuse(int fd, const std::string& why) {
        try {
            write_frame(fd, Frame{Kind::Error}, why.data(), why.size());
        } catch (const std::exception&) {
        }
    }

    // A path a client asked for, beneath --root: no `..`, no absolute path, and
    // no symbolic link on the way that leads out of it.
    std::string beneath_root(const std::string& rel) const {
        check_relative_path(rel);
        char root[PATH_MAX], path[PATH_MAX];
        const std::string joined = o_.root + "/" + rel;
        if (!::realpath(o_.root.c_str(), root)) throw std::runtime_error(o_.root + ": " + std::strerror(errno));
        if (!::realpath(joined.c_str(), path)) throw std::runtime_error(rel + ": " + std::strerror(errno));
        const std::string r(root), p(path);
        if (p.compare(0, r.size() + 1, r + "/") != 0) throw std::runtime_error(rel + ": leads out of the served tree");
        return p;
    }

    // A pull (`slabcast stage --from`): the client asked for files on stream 0;
    // they go back over the streams it opens, as `slabcast move` would send them.
    void serve_pull(int fd, std::uint64_t id, const nlohmann::json& wanted) {
        if (!o_.allow_pull) throw std::runtime_error("this server does not give files out (start it with --allow-pull)");
        if (!wanted.is_array() || wanted.empty()) throw std::runtime_error("a pull names no files");
        std::vector<std::string> sources;
        for (const auto& w : wanted) {
            if (!w.is_string()) throw std::runtime_error("a pull asks for " + w.dump() + ", not a path");
            sources.push_back(beneath_root(w.get<std::string>()));
        }
        Manifest manifest = scan_sources(sources, kDefaultBlock);
        SendSettings s;
        s.readers = 2;
        s.ring_bytes = static_cast<std::size_t>(o_.ring_mb) << 20;
        s.peer_timeout_s = o_.peer_timeout_s;
        s.transfer_id = id;
        auto t = std::make_shared<SendTransfer>(std::move(manifest), s);
        {
            std::lock_guard lock(mutex_);
            if (pulls_.count(id) || transfers_.count(id)) throw std::runtime_error("a transfer with this id is running");
            pulls_[id] = t;
        }
        try {
            t->start_on(fd);
            const std::string report = t->finish();
            spdlog::info("serve: pull {:016x} of {} done: {}", id, wanted.dump(), report);
        } catch (...) {
            std::lock_guard lock(mutex_);
            pulls_.erase(id);
            throw;
        }
        std::lock_guard lock(mutex_);
        pulls_.erase(id);
    }

    const ServeOptions& o_;
    AddressFilter allowed_;
    std::optional<Key> key_;
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
    c->add_option("--port", o->port, "TCP port")->capture_default_str();
    c->add_option("--writers", o->writers, "front-end threads writing blocks, per transfer")->capture_default_str();
    c->add_option("--ring-mb", o->ring_mb, "block cache per transfer, MiB")->capture_default_str();
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
    c->add_flag("--insecure-no-auth", o->insecure_no_auth,
                "listen beyond loopback without --key-file: any client that reaches the port may write into --root");
    c->callback([o, &run] { run = [o] { return Server(*o).run(); }; });
}

}  // namespace slabcast
