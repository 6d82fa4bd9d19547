#include "slabcast/memory_info.h"

#include <fstream>
#include <string>

namespace slabcast {

std::uint64_t mem_available_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::uint64_t kb = 0;
    while (meminfo >> key >> kb) {
        if (key == "MemAvailable:") return kb * 1024;
        meminfo.ignore(256, '\n');
    }
    return 0;
}

bool stays_in_page_cache(std::uint64_t bytes) { return bytes < mem_available_bytes() / 2; }

}  // namespace slabcast
