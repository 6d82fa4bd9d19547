#include "base/host_checks.h"

#include "base/numa_placement.h"
#include "base/sysfs.h"
#include "base/udp.h"

#include "slabcast/units.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace slabcast {

namespace fs = std::filesystem;

std::uint64_t free_bytes(const std::string& dir) {
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) != 0) throw std::runtime_error(dir + ": cannot stat: " + std::strerror(errno));
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(fs.f_bavail), static_cast<std::uint64_t>(fs.f_frsize), &bytes))
        return UINT64_MAX;
    return bytes;
}

void require_free_space(const std::string& dir, std::uint64_t need, const std::string& what) {
    const std::uint64_t have = free_bytes(dir);
    if (need > have)
        throw std::runtime_error(dir + " has " + format_bytes(have) + " free, " + what + " need " + format_bytes(need));
}

void require_own_directory(const std::string& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) throw std::runtime_error(dir + ": cannot stat: " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) throw std::runtime_error(dir + ": is not a directory (a symbolic link?); refused");
    const std::string mode = fmt::format("{:04o}", st.st_mode & 07777);
    if (st.st_mode & S_IWOTH) {
        // Sticky (a tmpfs mounted for staging is 1777): no one can rename or
        // remove another's files, only take names first.
        if (!(st.st_mode & S_ISVTX))
            throw std::runtime_error(dir + ": writable by anyone (mode " + mode +
                                     "); refused: anyone could replace what is written there");
        spdlog::warn("{}: shared with every user (mode {}): another user could take the names written there first; "
                     "a directory of your own is safer", dir, mode);
        return;
    }
    if (st.st_uid != ::geteuid())
        throw std::runtime_error(dir + ": owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
                                 std::to_string(::geteuid()) + "); refused: its owner could replace what is written there");
}

std::string default_interface() {
    const std::string nic = default_route_interface();
    return nic.empty() ? "lo" : nic;
}

HostFinding check_sysctl(const SysctlWant& s) {
    const long now = read_long(sysctl_path(s.name));
    HostFinding f{s.name, now < 0 ? "unreadable" : fmt::format("{} ({})", now, s.why), ""};
    if (now < s.want) f.advice = fmt::format("sysctl -w {}={}", s.name, s.want);
    return f;
}

HostFinding check_mtu(const std::string& nic) {
    const long mtu = read_long("/sys/class/net/" + nic + "/mtu");
    HostFinding m{"MTU of " + nic, std::to_string(mtu), ""};
    // A full quad packet is 8968 bytes + 28 of UDP/IPv4 headers.
    if (mtu > 0 && mtu < 8996)
        m.advice = "quad packets of 8968 B are fragmented below MTU 8996: ip link set dev " + nic +
                   " mtu 9000 (and on every switch port on the path)";
    return m;
}

HostFinding check_irqbalance() {
    bool running = false;
    std::error_code ec;
    for (const auto& p : fs::directory_iterator("/proc", ec)) {
        const std::string pid = p.path().filename().string();
        if (!pid.empty() && std::isdigit(static_cast<unsigned char>(pid[0])) &&
            read_first_line(p.path().string() + "/comm") == "irqbalance")
            running = true;
    }
    return {"irqbalance", running ? "running" : "not running",
            running ? "it moves the NIC's interrupts around the pinned receiver threads: systemctl stop irqbalance, "
                      "then pin each queue's IRQ (/proc/irq/N/smp_affinity_list) to the CPU of its receiver thread"
                    : ""};
}

HostFinding check_irqs(const std::string& nic) {
    std::ifstream in("/proc/interrupts");
    std::string line, irqs;
    while (std::getline(in, line))
        if (line.find(nic) != std::string::npos) {
            const std::string irq = line.substr(0, line.find(':'));
            const auto first = irq.find_first_not_of(' ');
            const std::string n = irq.substr(first == std::string::npos ? 0 : first);
            irqs += " " + n + "->cpu" + read_first_line("/proc/irq/" + n + "/smp_affinity_list");
        }
    return {"IRQs of " + nic, irqs.empty() ? "none listed (virtual or loopback)" : irqs, ""};
}

HostFinding check_governor() {
    const std::string governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    return {"CPU frequency governor", governor.empty() ? "not exposed (a VM, or no cpufreq)" : governor,
            governor.empty() || governor == "performance"
                ? ""
                : "cpupower frequency-set -g performance (steady clocks for the receivers)"};
}

HostFinding check_numa(const std::string& nic) {
    const std::string node = read_first_line("/sys/class/net/" + nic + "/device/numa_node");
    int nodes = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/sys/devices/system/node", ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("node", 0) == 0 && std::isdigit(static_cast<unsigned char>(name.back()))) ++nodes;
    }
    const std::string nic_node = node.empty() || node == "-1" ? "0" : node;
    const std::string cpus = read_first_line("/sys/devices/system/node/node" + nic_node + "/cpulist");
    return {"NUMA",
            fmt::format("{} node(s); {} is on node {} (CPUs {})", nodes, nic, node.empty() ? "? (no device)" : node, cpus),
            nodes > 1 && (node.empty() || node == "-1")
                ? "the NIC reports no node: give the receiver the NIC's CPUs with slabcast receive --cpus"
                : ""};
}

HostFinding check_offloads() {
    const Socket probe(open_udp_socket(AF_INET));
    return {"UDP GSO / GRO",
            std::string(enable_gso(probe.fd(), 8968) ? "GSO yes" : "GSO no") + ", " +
                (enable_gro(probe.fd()) ? "GRO yes" : "GRO no"),
            ""};
}

HostFinding check_staging_pages(const std::string& staging) {
    std::error_code ec;
    const std::string dir = fs::weakly_canonical(staging, ec).string();
    std::ifstream in("/proc/mounts");
    std::string device, mount, type, options, best_type, best_options;
    std::size_t best = 0;
    for (std::string line; std::getline(in, line);) {
        std::istringstream f(line);
        if (!(f >> device >> mount >> type >> options)) continue;
        const bool under = dir == mount || dir.rfind(mount == "/" ? mount : mount + "/", 0) == 0;
        if (under && mount.size() >= best) {
            best = mount.size();
            best_type = type;
            best_options = options;
        }
    }
    HostFinding f{"staging pages (" + staging + ")", best_type.empty() ? "unknown filesystem" : best_type, ""};
    if (best_type != "tmpfs") return f;
    const bool huge = best_options.find("huge=always") != std::string::npos ||
                      best_options.find("huge=within_size") != std::string::npos;
    f.now = huge ? "tmpfs with huge pages" : "tmpfs with 4 KiB pages";
    if (!huge)
        f.advice = "every new step is mapped a 4 KiB page at a time, and the shuffler pays for each page it first "
                   "touches (3x on a VM with shadow paging, see docs/performance.md): stage into a tmpfs with huge "
                   "pages, e.g. mount -t tmpfs -o huge=within_size,size=64G tmpfs " + staging;
    return f;
}

void warn_limits(const std::string& role, const std::vector<HostFinding>& findings) {
    for (const auto& f : findings)
        if (!f.advice.empty()) spdlog::warn("{}: {} is {}, which limits line rate: {}", role, f.what, f.now, f.advice);
}

}  // namespace slabcast
