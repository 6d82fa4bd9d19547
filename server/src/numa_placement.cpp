#include "numa_placement.h"

#include <numa.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
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

std::vector<int> parse_index_list(const std::string& text, const std::string& what) {
    std::vector<int> cpus;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(pos, end - pos);
        const auto dash = item.find('-');
        try {
            std::size_t used = 0;
            const int lo = std::stoi(item.substr(0, dash), &used);
            const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
            if (lo < 0 || hi < lo || hi >= CPU_SETSIZE) throw std::invalid_argument("range");
            for (int c = lo; c <= hi; ++c) cpus.push_back(c);
        } catch (const std::exception&) {
            throw std::invalid_argument(what + " '" + text + "': bad item '" + item + "'");
        }
        pos = end + 1;
    }
    if (cpus.empty()) throw std::invalid_argument(what + " '" + text + "' is empty");
    return cpus;
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

void bind_and_prefault(void* addr, std::size_t bytes, int node) {
    if (node >= 0 && numa_available() >= 0) numa_tonode_memory(addr, bytes, node);
    if (::madvise(addr, bytes, MADV_POPULATE_WRITE) == 0) return;
    // Older kernels: touch each page with an atomic add of zero (writes, keeps contents).
    const long page = ::sysconf(_SC_PAGESIZE);
    auto* p = static_cast<std::uint8_t*>(addr);
    for (std::size_t off = 0; off < bytes; off += static_cast<std::size_t>(page))
        reinterpret_cast<std::atomic<std::uint8_t>*>(p + off)->fetch_add(0, std::memory_order_relaxed);
}

}  // namespace slabcast
