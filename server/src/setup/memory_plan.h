// What a deployment holds in memory on each host, planned before anything
// starts: a receiver's slabs (K value and age buffers each) and a stager's
// window of steps both live in tmpfs, that is in RAM. At the SC11 scale a
// step is 4 GiB (Balman et al., 2012, section 4.2), so three copies of it
// here and there decide whether a host can run its roles at all; `plan` and
// `demo` refuse a configuration that cannot fit, naming what does not.
#pragma once

#include "setup/deployment.h"

#include <cstdint>
#include <string>
#include <vector>

namespace slabcast {

struct MemoryPart {
    std::string what;  // "slabs of full (3 buffers)" / "staging window of full (1 step)"
    std::string dir;   // the tmpfs directory it lives in
    std::uint64_t bytes = 0;
};

struct HostMemory {
    std::string host;
    bool loopback = true;  // every address of its roles is 127.x, ::1 or localhost: this machine
    std::vector<MemoryPart> parts;
    std::uint64_t total() const;
};

// Receiver `r`'s slab files of volume `v`.
MemoryPart slabs_part(const PlanVolume& v, const PlanHost& r);
// Sender `s`'s staging window: whole steps of the dataset, the largest
// volume's (the head-to-head's eighth is read from the full volume's steps).
MemoryPart staging_part(const Deployment& d, const PlanVolume& v, const PlanHost& s);

// Every host's tmpfs needs. A stager without a budget takes half the free
// space when it starts: counted as one step, the least it needs.
std::vector<HostMemory> plan_memory(const Deployment& d);

// `slabcast plan` run on a host it plans (`only_host`), or for hosts that
// are all this machine's loopback: "" when they fit here, else why not,
// naming the host and the figures.
std::string plan_memory_problem(const Deployment& d, const std::string& only_host);

// What this machine has for them.
struct MachineRoom {
    std::uint64_t ram_available = 0;  // MemAvailable
    std::uint64_t shm_free = 0;       // free space of the tmpfs each part's dir is in (the first part's)
    std::string shm_dir;              // that directory, or its nearest existing parent
};
// Memory a plan leaves untouched: for the kernel, the page cache the stager
// reads the dataset through, and the roles' own (a 1024^3 receiver: 0.4 GiB).
// Without it the 1024^3 demo, planned to within 0.3 GiB, met the OOM killer.
constexpr std::uint64_t kMemoryHeadroom = 1ull << 30;
MachineRoom room_here(const std::string& dir);

// "" when `hosts` (all run on this machine), plus `other_ram` for what else
// runs here (renderers), fit `room`; otherwise why not, in one sentence per
// shortfall, naming the figures.
std::string memory_problem(const std::vector<HostMemory>& hosts, std::uint64_t other_ram,
                           const std::string& other_what, const MachineRoom& room);

}  // namespace slabcast
