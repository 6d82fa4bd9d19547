#include "base/sysfs.h"

#include <fstream>

namespace slabcast {

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

long read_long(const std::string& path) {
    try {
        return std::stol(read_first_line(path));
    } catch (const std::exception&) {
        return -1;
    }
}

std::string sysctl_path(const std::string& name) {
    std::string p = "/proc/sys/" + name;
    for (auto& c : p)
        if (c == '.') c = '/';
    return p;
}

}  // namespace slabcast
