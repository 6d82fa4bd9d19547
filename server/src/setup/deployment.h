// A deployment: which hosts send and receive which streams of which volume,
// and the controller that syncs them (Balman et al., 2012, section 4.1,
// figure 3). Read from a deployment file (docs/deployment.md) or built by
// `slabcast demo` for this machine; deploy_plan.h turns it into commands and
// memory_plan.h into the memory each host needs.
#pragma once

#include "slabcast/volume.h"

#include <optional>
#include <string>
#include <vector>

namespace slabcast {

// A host that sends or receives some of a volume's streams.
struct PlanHost {
    std::string name;           // how the plan names it ("render1")
    std::string address;        // senders: where they send from and take syncs on; receivers: where they listen
    std::string streams_text;   // as written, "0-1,4"
    std::vector<int> streams;   // spelled out
    // Receivers only, empty (0) for the role's default:
    std::string cpus, shm_dir;
    int buffers = 0;            // value buffers per slab (receive --buffers)
    std::string readers;        // what reads its slabs ("view,record"): sets buffers when not given
    // Senders only:
    std::string staging = "/dev/shm/slabcast-staging";
    std::string budget;         // empty: stage's default
    std::string rate;           // per stream; empty: the volume's
    int stager_port = 0;        // 0: the volume's ports.stager
};

// Stream k is received on data + k and its shuffler takes syncs on sync + k;
// each sender's stager takes syncs on stager.
struct PortLayout {
    int data = 9000, sync = 9100, stager = 9200;
};

// One volume, cut into slabs of slab_depth planes: one stream per slab.
struct PlanVolume {
    std::string name;
    Dims dims;
    int slab_depth = 0;
    std::string rate = "2.81G";  // per stream
    std::string wire = "run";    // data packets: run or quad (docs/wire-format.md)
    std::string codec = "none";  // run packets' codec: none, lz4, zfp:RATE
    // Coarse first, holes filled from the step itself: a lossy path's choice
    // (a deployment file's "wan": true; docs/wire-format.md, "Send order").
    std::string order = "scan";     // shuffle --order: scan, morton or progressive
    std::string fill = "previous";  // receive --fill: previous or nearest
    PortLayout ports;
    std::vector<PlanHost> senders, receivers;  // every stream exactly once in each
};

struct PlanController {
    std::string host;
    std::string address;  // not empty: shufflers and stagers take syncs from it only
    bool loop = false;    // stagers and the controller start again after the last step
    std::optional<double> interval;  // seconds per step
    std::optional<long> count;       // steps before it stops
};

struct Deployment {
    std::string dataset;
    std::string key_file;  // not empty: syncs are authenticated
    // All of them read `dataset` and share the controller: a deployment file
    // has one; the demo's head-to-head two (the full volume and an eighth),
    // as one controller synced the shufflers of both at SC11 (Balman et al.,
    // 2012, section 4.3).
    std::vector<PlanVolume> volumes;
    PlanController controller;
};

// The deployment file's text -> a deployment whose every stream has one
// sender and one receiver and whose ports fit. `config_name` names the file in
// every error: throws std::runtime_error("<config_name>: <problem>").
Deployment read_deployment(const std::string& json_text, const std::string& config_name);

}  // namespace slabcast
