// A move's TCP streams, opened while its sources are scanned: the connect
// and the server's Challenge cost two crossings of the path each, which a
// tree's scan then hides instead of adding. Each stream's Hello still waits
// for the manifest (its transfer, its destination); a connection whose Challenge is older than half
// the time the server waits for a Hello (the Challenge says how long) is
// left, and the stream connects again.
#pragma once

#include "mover/auth.h"
#include "mover/stream_io.h"
#include "slabcast/unique_fd.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace slabcast::mover {

struct EarlyStream {
    UniqueFd fd;
    Challenge challenge;
};

class EarlyStreams {
public:
    // Starts connecting `n` streams, each on a thread of its own; stream 0
    // first, the others once it is connected, so that a server meets stream 0
    // first, as it would without this.
    EarlyStreams(const std::string& host, int port, int n, int peer_timeout_s);
    // Streams not taken are closed once their connect ends (their threads
    // are not waited for: a connect to a host that does not answer takes
    // the peer timeout, and a move that failed its scan ends now).
    ~EarlyStreams();
    EarlyStreams(const EarlyStreams&) = delete;
    EarlyStreams& operator=(const EarlyStreams&) = delete;

    // Stream `index`'s connection, once its connect ends, with its Challenge
    // read; nullopt when there is none to take (beyond `n`, taken already)
    // or its Hello could come too late. Throws what its connect or Challenge
    // threw (the server refused, it cannot be reached), as connecting now would.
    std::optional<EarlyStream> take(int index);
    // The transfer stopped: connections still waiting for their Challenge
    // are shut down, so that nothing waits for a server that never sends one.
    void stop();

private:
    struct Slot {
        bool done = false, taken = false;
        std::optional<EarlyStream> stream;
        std::exception_ptr error;
    };
    struct Shared {
        std::mutex mutex;
        std::condition_variable changed;
        std::vector<Slot> slots;
        bool abandoned = false;
        StoppableSockets waiting;  // connected, their Challenge not read yet
    };
    static void open(std::shared_ptr<Shared> shared, std::string host, int port, int peer_timeout_s, int index);
    std::shared_ptr<Shared> shared_;
};

}  // namespace slabcast::mover
