#include "mover/pull.h"

#include "mover/stream_io.h"
#include "mover/wire.h"

#include <nlohmann/json.hpp>
#include <sys/socket.h>

#include <chrono>
#include <random>
#include <stdexcept>

namespace slabcast::mover {

Pull::Pull(PullSettings settings, std::vector<std::string> paths, std::string local_root)
    : settings_(std::move(settings)), paths_(std::move(paths)), local_root_(std::move(local_root)) {
    if (settings_.streams < 1 || settings_.streams > 128) throw std::invalid_argument("pull: streams must be 1..128");
    std::random_device rd;
    id_ = (static_cast<std::uint64_t>(rd()) << 32) | rd();
    ReceiveSettings r{settings_.writers, settings_.ring_bytes, false, "pull", ReceiveLimits{}};  // what serve takes, at its defaults
    transfer_ = std::make_shared<ReceiveTransfer>(id_, local_root_, "", r);
    thread_ = std::thread(&Pull::run, this);
}

Pull::~Pull() {
    stopping_ = true;
    transfer_->abort("the pull was stopped");
    thread_.join();
}

void Pull::check() const {
    std::lock_guard lock(mutex_);
    if (!problem_.empty()) throw std::runtime_error(problem_);
}

std::uint64_t Pull::bytes_written() const { return transfer_->bytes_written(); }

void Pull::run() {
    std::vector<UniqueFd> fds;
    std::vector<std::unique_ptr<Channel>> channels;  // each stream's, through its fd
    std::vector<std::thread> streams;
    std::string problem;
    try {
        // Stream 0 asks for the files; the server answers with the manifest on it.
        fds.emplace_back(connect_tcp(settings_.host, settings_.port, settings_.peer_timeout_s));
        const std::string hello = nlohmann::json{{"stream", 0}, {"get", paths_}}.dump();
        ClientHandshake first_handshake(settings_.key, settings_.encrypt);
        first_handshake.run(fds[0].get(), id_, hello, settings_.peer_timeout_s);
        channels.push_back(std::make_unique<Channel>(first_handshake.channel(fds[0].get())));
        std::thread first([this, c = channels.back().get()] { transfer_->run_first_stream(*c); });
        // The other streams join once the server knows the transfer (it has our answer to its manifest).
        while (!transfer_->prepared() && !transfer_->finished() && !stopping_)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (int k = 1; k < settings_.streams && transfer_->prepared() && !transfer_->finished(); ++k) {
            try {
                fds.emplace_back(connect_tcp(settings_.host, settings_.port, settings_.peer_timeout_s));
                const std::string more = nlohmann::json{{"stream", k}}.dump();
                ClientHandshake handshake(settings_.key, settings_.encrypt);
                handshake.run(fds.back().get(), id_, more, settings_.peer_timeout_s);
                channels.push_back(std::make_unique<Channel>(handshake.channel(fds.back().get())));
                streams.emplace_back([this, c = channels.back().get()] { transfer_->run_stream(*c); });
            } catch (const std::exception& e) {  // fewer streams, slower, still whole
                problem = e.what();
                break;
            }
        }
        first.join();
        for (auto& t : streams) t.join();
        if (!transfer_->succeeded()) problem = transfer_->problem();
        else problem.clear();
    } catch (const std::exception& e) {
        transfer_->abort(e.what());
        for (auto& fd : fds) ::shutdown(fd.get(), SHUT_RDWR);
        for (auto& t : streams) t.join();
        problem = e.what();
    }
    if (problem.empty() && !transfer_->succeeded()) problem = "the pull from " + settings_.host + " did not finish";
    if (!problem.empty()) problem = "pull from " + settings_.host + ":" + std::to_string(settings_.port) + ": " + problem;
    {
        std::lock_guard lock(mutex_);
        problem_ = problem;
    }
    finished_ = true;
}

void Pull::now(const PullSettings& settings, const std::vector<std::string>& paths, const std::string& local_root) {
    Pull p(settings, paths, local_root);
    while (!p.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    p.check();
}

}  // namespace slabcast::mover
