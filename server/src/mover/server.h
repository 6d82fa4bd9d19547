// The server behind `slabcast serve` (docs/mover.md): one TCP port, where
// connections are admitted (server_admission.cpp: the accept loop, --allow,
// the Hello, the connection limits) and each admitted stream is handed to
// its transfer (server_dispatch.cpp: a transfer in, a pull out, the transfer
// limit). Many files over a few long-lived streams on one fixed port, every
// block tagged with its file: Balman et al., 2012, section 5.3.
#pragma once

#include "base/address_filter.h"
#include "mover/auth.h"
#include "mover/channel.h"
#include "mover/hello.h"
#include "mover/receive_transfer.h"
#include "mover/send_transfer.h"
#include "mover/waiting_connections.h"

#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace slabcast::mover {

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
    int max_transfers_per_address = 8;
    int max_waiting = 64;
    int hello_timeout_s = 10;
    int idle_timeout_s = 300;
};

class Server {
public:
    // Creates --root (or names why it cannot be used), loads the key, refuses
    // to listen beyond loopback without one (unless --insecure-no-auth).
    explicit Server(const ServeOptions& o);
    // Serves until stopped (or, with --once, the first transfer); 1 when a transfer failed.
    int run();

private:
    // Admission (server_admission.cpp).
    void check_descriptor_limit() const;
    void accept_all(int listener, WaitingConnections& waiting);
    Hello read_hello(Arrival& a) const;
    void admit(Arrival a, WaitingConnections& waiting);
    void reap();
    // Dispatch (server_dispatch.cpp).
    void serve_stream(Channel& c, const Hello& h, const std::string& from);
    void serve_pull(Channel& c, const Hello& h, const std::string& from);
    // Under mutex_: --max-transfers (transfers whose manifest is in, and
    // pulls) and --max-transfers-per-address (any transfer or pull begun).
    void check_transfer_limit() const;
    void check_address_limit(const std::string& from) const;
    void count_transfer(std::uint64_t id);  // its manifest is in
    void forget_transfer(std::uint64_t id);
    bool served_once();
    void retune();

    const ServeOptions& o_;
    AddressFilter allowed_;
    std::optional<Key> key_;
    ReceiveLimits limits_;
    std::mutex mutex_;
    std::map<std::uint64_t, std::shared_ptr<ReceiveTransfer>> transfers_;
    std::condition_variable transfer_started_;  // a stream 0 put its transfer in transfers_
    std::map<std::uint64_t, std::shared_ptr<SendTransfer>> pulls_;
    std::map<std::uint64_t, std::string> client_of_;  // every transfer and pull begun: its client's address
    std::set<std::uint64_t> counted_;  // transfers in whose manifest has arrived
    struct StreamThread {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::vector<StreamThread> threads_;
    int writers_now_ = 0;
    int completed_ = 0, failures_ = 0;
};

}  // namespace slabcast::mover
