// `slabcast tune`: reads the host and says, for the interface a role uses, what
// limits this traffic and the command that changes it (seeds/000 section 4.5:
// IRQ and NUMA binding, socket buffers, MTU). `--apply` (root) sets the safe
// sysctls. Nothing else is changed.
#include "roles.h"
#include "udp.h"

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
    bool apply = false;
};

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// A number from a /proc or /sys file; -1 when missing or not a number.
long read_long(const std::string& path) {
    try {
        return std::stol(read_first_line(path));
    } catch (const std::exception&) {
        return -1;
    }
}

// The interface of the default route, else loopback.
std::string default_interface() {
    std::ifstream in("/proc/net/route");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string name, destination;
        if (f >> name >> destination && destination == "00000000") return name;
    }
    return "lo";
}

struct Finding {
    std::string what, now, advice;  // advice empty: fine as it is
};

void print(const std::vector<Finding>& findings) {
    for (const auto& f : findings)
        std::cout << (f.advice.empty() ? "  ok      " : "  change  ") << f.what << ": " << f.now
                  << (f.advice.empty() ? "" : "\n          -> " + f.advice) << "\n";
}

struct Sysctl {
    const char* name;
    long want;
    const char* why;
};
// Receiver buffers of 64 MiB (receive --rcvbuf-mb), sender 16 MiB, and a
// backlog deep enough for bursts of 9000-byte frames at 100 Gbit/s.
constexpr Sysctl kSysctls[] = {
    {"net.core.rmem_max", 64L << 20, "receive socket buffers (receive asks for 64 MiB)"},
    {"net.core.wmem_max", 16L << 20, "send socket buffers (shuffle asks for 16 MiB)"},
    {"net.core.netdev_max_backlog", 250000, "packets queued per CPU before the kernel drops them"},
};

std::string sysctl_path(const std::string& name) {
    std::string p = "/proc/sys/" + name;
    for (auto& c : p)
        if (c == '.') c = '/';
    return p;
}

int run_tune(const TuneOptions& o) {
    const std::string nic = o.interface.empty() ? default_interface() : o.interface;
    const std::string sys = "/sys/class/net/" + nic;
    if (!fs::exists(sys)) throw std::runtime_error("interface '" + nic + "' does not exist (see `ip link`)");

    std::vector<Finding> findings;
    for (const auto& s : kSysctls) {
        const long now = read_long(sysctl_path(s.name));
        Finding f{s.name, now < 0 ? "unreadable" : fmt::format("{} ({})", now, s.why), ""};
        if (now < s.want) f.advice = fmt::format("sysctl -w {}={}", s.name, s.want);
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

    const long mtu = read_long(sys + "/mtu");
    Finding m{"MTU of " + nic, std::to_string(mtu), ""};
    // A full quad packet is 8968 bytes + 28 of UDP/IPv4 headers.
    if (mtu > 0 && mtu < 8996)
        m.advice = "quad packets of 8968 B are fragmented below MTU 8996: ip link set dev " + nic + " mtu 9000 "
                   "(and on every switch port on the path)";
    findings.push_back(m);

    bool irqbalance = false;
    for (const auto& p : fs::directory_iterator("/proc")) {
        if (!std::isdigit(static_cast<unsigned char>(p.path().filename().string()[0]))) continue;
        if (read_first_line(p.path().string() + "/comm") == "irqbalance") irqbalance = true;
    }
    findings.push_back({"irqbalance", irqbalance ? "running" : "not running",
                        irqbalance ? "it moves the NIC's interrupts around the pinned receiver threads: "
                                     "systemctl stop irqbalance, then pin each queue's IRQ "
                                     "(/proc/irq/N/smp_affinity_list) to the CPU of its receiver thread"
                                   : ""});
    {
        std::ifstream in("/proc/interrupts");
        std::string line, irqs;
        while (std::getline(in, line))
            if (line.find(nic) != std::string::npos) {
                const std::string irq = line.substr(0, line.find(':'));
                const auto first = irq.find_first_not_of(' ');
                const std::string n = irq.substr(first == std::string::npos ? 0 : first);
                irqs += " " + n + "->cpu" + read_first_line("/proc/irq/" + n + "/smp_affinity_list");
            }
        findings.push_back({"IRQs of " + nic, irqs.empty() ? "none listed (virtual or loopback)" : irqs, ""});
    }

    const std::string governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    findings.push_back({"CPU frequency governor", governor.empty() ? "not exposed (a VM, or no cpufreq)" : governor,
                        governor.empty() || governor == "performance"
                            ? ""
                            : "cpupower frequency-set -g performance (steady clocks for the receivers)"});

    const std::string node = read_first_line(sys + "/device/numa_node");
    int nodes = 0;
    for (const auto& e : fs::directory_iterator("/sys/devices/system/node"))
        if (e.path().filename().string().rfind("node", 0) == 0 &&
            std::isdigit(static_cast<unsigned char>(e.path().filename().string().back())))
            ++nodes;
    const std::string nic_node = node.empty() || node == "-1" ? "0" : node;
    const std::string cpus = read_first_line("/sys/devices/system/node/node" + nic_node + "/cpulist");
    findings.push_back({"NUMA", fmt::format("{} node(s); {} is on node {} (CPUs {})", nodes, nic,
                                            node.empty() ? "? (no device)" : node, cpus),
                        nodes > 1 ? "run the receiver on the NIC's node: slabcast receive --cpus " + cpus : ""});

    const Socket probe(open_udp_socket(AF_INET));
    findings.push_back({"UDP GSO / GRO", std::string(enable_gso(probe.fd(), 8968) ? "GSO yes" : "GSO no") + ", " +
                                             (enable_gro(probe.fd()) ? "GRO yes" : "GRO no"),
                        ""});

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
    c->add_flag("--apply", o->apply, "set the socket-buffer and backlog sysctls (root)");
    c->callback([o, &run] { run = [o] { return run_tune(*o); }; });
}

}  // namespace slabcast
