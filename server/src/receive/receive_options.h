// `slabcast receive`'s options, and the receiver they run (receive.cpp).
#pragma once

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"

#include <string>
#include <vector>

namespace slabcast {

struct ReceiveOptions {
    std::string name;
    std::string dims_text;
    int slab_depth = 0;
    std::string listen;
    std::vector<std::string> streams;  // "K:PORT"
    std::string shm_dir = kDefaultShmDir;
    std::string field = "density";
    int ghost_planes = 1;
    std::string cpus;
    std::string interface;
    std::vector<std::string> allow;  // "CIDR,..." or "K=CIDR,..."
    bool keep = false;               // leave the slabs in place on a clean stop
    int rcvbuf_mb = 64;
    int batch = 64;
    int stale_window_ms = 250;
    std::string fill = "previous";
    int step_timeout_ms = 500;
    int buffers = kDefaultBuffers;
    std::string readers;  // --readers: what sets `buffers` when it is not given
    bool gro = true;
    bool land = true;
    int fec_window = 16;  // FEC groups a stream holds open; 0 takes no FEC
    std::string stats_json;
};

// Runs the receiver until a stop signal; its exit code.
int run_receive(const ReceiveOptions& o);

}  // namespace slabcast
