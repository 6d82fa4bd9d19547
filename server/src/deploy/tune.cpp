// `slabcast tune`: reads the host and says, for the interface a role uses, what
// limits this traffic and the command that changes it (Balman et al., 2012, section 4.5:
// IRQ and NUMA binding, socket buffers, MTU). `--apply` (root) sets the safe
// sysctls. Nothing else is changed.
#include "host/host_checks.h"
#include "host/roles.h"
#include "host/sysfs.h"

#include <net/if.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

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
};

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
    c->callback([o, &run] { run = [o] { return run_tune(*o); }; });
}

}  // namespace slabcast
