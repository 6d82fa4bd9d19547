// `slabcast tune`: reads the host and says, for the interface a role uses, what
// limits this traffic and the command that changes it (Balman et al., 2012, section 4.5:
// IRQ and NUMA binding, socket buffers, MTU). `--apply` (root) sets the safe
// sysctls. Nothing else is changed. With `--dims` it also sizes the
// receiver's shared memory (K value and age buffers per slab).
#include "base/host_checks.h"
#include "base/roles.h"
#include "base/sysfs.h"

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"
#include "slabcast/units.h"
#include "slabcast/volume.h"

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace slabcast {
namespace {

namespace fs = std::filesystem;

struct TuneOptions {
    std::string interface;
    std::string staging;
    bool apply = false;
    // The receiver's shared memory, when the volume is given.
    std::string dims;
    int slab_depth = 0;
    int slabs = 0;  // slabs this host receives; 0: all
    int buffers = kDefaultBuffers;
    std::string shm_dir = kDefaultShmDir;
};

// What `receive` will hold in the shm directory: each slab's value and age
// buffers (docs/shared-memory.md), against the directory's free space.
HostFinding check_slab_memory(const TuneOptions& o) {
    const Dims dims = parse_dims(o.dims);
    if (const std::string p = volume_problem(dims, o.slab_depth); !p.empty()) throw std::invalid_argument(p);
    const int count = slab_count(dims, o.slab_depth);
    const int slabs = o.slabs ? std::min(o.slabs, count) : count;
    std::uint64_t need = 0;
    for (int k = 0; k < slabs; ++k) {
        const SlabGeometry g = slab_geometry(dims, o.slab_depth, k, 1);
        SlabLayout layout;
        slab_layout(static_cast<std::uint64_t>(dims.plane()) * static_cast<std::uint64_t>(g.stored_planes()),
                    o.buffers, layout);
        need += layout.file_bytes;
    }
    std::string dir = o.shm_dir;
    while (!fs::exists(dir) && dir.find('/') != std::string::npos) dir = dir.substr(0, dir.rfind('/'));
    const std::uint64_t free = free_bytes(dir.empty() ? "/" : dir);
    const std::string what = fmt::format("shared memory for {} slab(s) of {}, depth {}, {} buffers", slabs,
                                         to_string(dims), o.slab_depth, o.buffers);
    const std::string now = fmt::format("{} needed, {} free in {}", format_bytes(need), format_bytes(free), dir);
    if (need <= free) return HostFinding{what, now, ""};
    return HostFinding{what, now,
                   "grow the tmpfs (mount -o remount,size=... /dev/shm), fewer --buffers, or fewer slabs per host"};
}

using Finding = HostFinding;

void print(const std::vector<Finding>& findings) {
    for (const auto& f : findings)
        std::cout << (f.advice.empty() ? "  ok      " : "  change  ") << f.what << ": " << f.now
                  << (f.advice.empty() ? "" : "\n          -> " + f.advice) << "\n";
}

int run_tune(const TuneOptions& o) {
    const std::string nic = o.interface.empty() ? default_interface() : o.interface;
    const std::string sys = "/sys/class/net/" + nic;
    if (!fs::exists(sys)) throw std::runtime_error("interface '" + nic + "' does not exist (see `ip link`)");

    std::vector<Finding> findings;
    for (const auto& s : kWantedSysctls) {
        Finding f = check_sysctl(s);
        const long now = read_long(sysctl_path(s.name));
        if (o.apply && now < s.want) {
            std::ofstream out(sysctl_path(s.name));
            out << s.want;
            out.flush();
            if (out && read_long(sysctl_path(s.name)) == s.want)
                f = Finding{s.name, fmt::format("{} (was {}, set by --apply)", s.want, now), ""};
            else
                f.advice += "   [--apply could not set it: read-only here (not root, or a child network namespace)]";
        }
        findings.push_back(f);
    }
    findings.push_back(check_mtu(nic));
    findings.push_back(check_irqbalance());
    findings.push_back(check_irqs(nic));
    findings.push_back(check_governor());
    findings.push_back(check_numa(nic));
    findings.push_back(check_offloads());
    if (!o.staging.empty()) findings.push_back(check_staging_pages(o.staging));
    if (!o.dims.empty()) findings.push_back(check_slab_memory(o));

    std::cout << "slabcast tune: interface " << nic << (o.apply ? " (--apply)" : "") << "\n";
    print(findings);
    int changes = 0;
    for (const auto& f : findings) changes += !f.advice.empty();
    std::cout << (changes ? fmt::format("{} setting(s) to change; `slabcast tune --apply` (root) sets the sysctls\n", changes)
                          : std::string("nothing to change\n"));
    return 0;
}

}  // namespace

void register_tune(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<TuneOptions>();
    CLI::App* c = root.add_subcommand("tune", "check this host's settings for line-rate UDP and say what to change");
    c->add_option("--interface", o->interface, "network interface the roles use (default: the default route's)");
    c->add_option("--staging", o->staging, "also check the stager's staging directory (page size)");
    c->add_flag("--apply", o->apply, "set the socket-buffer and backlog sysctls (root)");
    c->add_option("--dims", o->dims, "also size the receiver's shared memory for this volume NX,NY,NZ");
    c->add_option("--slab-depth", o->slab_depth, "with --dims: z planes per slab")->check(CLI::Range(std::int64_t{1}, kMaxAxis));
    c->add_option("--slabs", o->slabs, "with --dims: slabs this host receives (default: all)")->check(CLI::Range(0, 1 << 20));
    c->add_option("--buffers", o->buffers, "with --dims: receive --buffers")
        ->check(CLI::Range(kMinBuffers, kMaxBuffers))
        ->capture_default_str();
    c->add_option("--shm-dir", o->shm_dir, "with --dims: receive --shm-dir")->capture_default_str();
    c->callback([o, &run] { run = [o] { return run_tune(*o); }; });
}

}  // namespace slabcast
