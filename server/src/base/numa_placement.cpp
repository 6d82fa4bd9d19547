#include "base/numa_placement.h"

#include "base/sysfs.h"

#include "slabcast/units.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <numa.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace slabcast {

std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    if (cpus.empty()) cpus.push_back(0);
    return cpus;
}

std::string default_route_interface() {
    std::ifstream in("/proc/net/route");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string name, destination;
        if (f >> name >> destination && destination == "00000000") return name;
    }
    return "";
}

std::string interface_of_address(const std::string& ip) {
    in6_addr want6{};
    in_addr want4{};
    const bool v4 = ::inet_pton(AF_INET, ip.c_str(), &want4) == 1;
    const bool v6 = !v4 && ::inet_pton(AF_INET6, ip.c_str(), &want6) == 1;
    if ((v4 && want4.s_addr == INADDR_ANY) || (v6 && IN6_IS_ADDR_UNSPECIFIED(&want6))) return default_route_interface();
    ifaddrs* list = nullptr;
    if (!(v4 || v6) || ::getifaddrs(&list) != 0) return "";
    std::string found;
    for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next) {
        if (!a->ifa_addr) continue;
        if (v4 && a->ifa_addr->sa_family == AF_INET &&
            reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == want4.s_addr)
            found = a->ifa_name;
        if (v6 && a->ifa_addr->sa_family == AF_INET6 &&
            std::memcmp(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, &want6, sizeof want6) == 0)
            found = a->ifa_name;
    }
    ::freeifaddrs(list);
    // 127.0.0.2 and the rest of 127/8 answer on loopback without being listed.
    if (found.empty() && v4 && (ntohl(want4.s_addr) >> 24) == 127) found = "lo";
    return found;
}

int numa_node_of_interface(const std::string& interface) {
    if (interface.empty()) return -1;
    const std::string text = read_first_line("/sys/class/net/" + interface + "/device/numa_node");
    try {
        return text.empty() ? -1 : std::stoi(text);
    } catch (const std::exception&) {
        return -1;
    }
}

std::vector<int> allowed_cpus_of_node(int node) {
    if (node < 0) return {};
    const std::string list = read_first_line("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
    if (list.empty()) return {};
    std::vector<int> out;
    const std::vector<int> allowed = allowed_cpus();
    for (int cpu : parse_index_list(list, CPU_SETSIZE - 1, "cpulist of node " + std::to_string(node)))
        for (int a : allowed)
            if (a == cpu) out.push_back(cpu);
    return out;
}

int numa_node_of(int cpu) {
    if (numa_available() < 0) return -1;
    return numa_node_of_cpu(cpu);
}

void pin_current_thread(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        throw std::runtime_error("cannot pin thread to cpu " + std::to_string(cpu) + ": " + std::strerror(errno));
}

void bind_and_prefault(void* addr, std::size_t bytes, int node, int fd, off_t offset) {
    if (node >= 0 && numa_available() >= 0) numa_tonode_memory(addr, bytes, node);
    if (::madvise(addr, bytes, MADV_POPULATE_WRITE) == 0) return;
    // EFAULT is what a fault would have made SIGBUS: no page to be had.
    if (errno != EINVAL)
        throw std::runtime_error(std::string("cannot fault its pages in: ") + std::strerror(errno) +
                                 (errno == EFAULT || errno == ENOMEM ? " (the file system or the memory is full)" : ""));
    // Kernels before 5.14 have no MADV_POPULATE_WRITE. Allocate through the file
    // first: fallocate fails with ENOSPC where a touch would be SIGBUS, and a
    // tmpfs places the pages by the policy just bound to the mapping.
    if (const int rc = ::posix_fallocate(fd, offset, static_cast<off_t>(bytes)); rc != 0)
        throw std::runtime_error(std::string("cannot allocate its pages: ") + std::strerror(rc));
    // Then touch each page with an atomic add of zero (writes, keeps contents).
    const long page = ::sysconf(_SC_PAGESIZE);
    auto* p = static_cast<std::uint8_t*>(addr);
    for (std::size_t off = 0; off < bytes; off += static_cast<std::size_t>(page))
        reinterpret_cast<std::atomic<std::uint8_t>*>(p + off)->fetch_add(0, std::memory_order_relaxed);
}

std::vector<int> choose_stream_cpus(const std::string& cpus, const std::string& nic, const std::string& address) {
    if (!cpus.empty()) return parse_index_list(cpus, CPU_SETSIZE - 1, "--cpus");
    const int node = numa_node_of_interface(nic);
    const std::vector<int> local = allowed_cpus_of_node(node);
    if (!local.empty()) {
        spdlog::info("receive: NIC {} is on NUMA node {}: stream threads and slabs there", nic, node);
        return local;
    }
    spdlog::info("receive: NIC {} has no NUMA node ({}): stream threads on every allowed CPU",
                 nic.empty() ? "?" : nic, nic.empty() ? "no interface holds " + address : "virtual, or one node");
    return allowed_cpus();
}

}  // namespace slabcast
