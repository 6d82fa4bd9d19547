// The receiving end of a pull: files beneath the root of a `slabcast serve
// --allow-pull` on another host, sent by that server over streams this end
// opens, into a local directory. It is how `slabcast stage --from` fetches
// timesteps from a data host. Runs in the background; the same transfer
// protocol, checksums and resume as `slabcast move`, in the other direction.
#pragma once

#include "mover/auth.h"
#include "mover/receive_transfer.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace slabcast::mover {

struct PullSettings {
    std::string host;
    int port = 7100;
    int streams = 4;
    int writers = 2;
    std::size_t ring_bytes = 64u << 20;
    int peer_timeout_s = 60;
    std::optional<Key> key;  // every stream is authenticated with it (mover/auth.h)
    bool encrypt = false;    // and sealed (mover/channel.h)
};

class Pull {
public:
    // `paths`: files or directories beneath the server's root; each arrives
    // under its own name in `local_root`.
    Pull(PullSettings settings, std::vector<std::string> paths, std::string local_root);
    ~Pull();  // stops a pull still running; what was written stays for a resumed one
    Pull(const Pull&) = delete;
    Pull& operator=(const Pull&) = delete;

    bool finished() const { return finished_; }
    // Once finished: throws naming what went wrong, unless every file arrived.
    void check() const;
    std::uint64_t bytes_written() const;

    // Pulls and waits; throws naming what went wrong.
    static void now(const PullSettings& settings, const std::vector<std::string>& paths, const std::string& local_root);

private:
    void run();

    PullSettings settings_;
    std::vector<std::string> paths_;
    std::string local_root_;
    std::uint64_t id_;
    std::shared_ptr<ReceiveTransfer> transfer_;
    std::atomic<bool> finished_{false}, stopping_{false};
    mutable std::mutex mutex_;
    std::string problem_;
    std::thread thread_;
};

}  // namespace slabcast::mover
