// Reading the kernel's one-value files (/sys, /proc/sys, /proc/irq): NUMA
// placement and the host checks both read them, and neither should need the
// other to do so.
#pragma once

#include <string>

namespace slabcast {

// The file's first line, without its newline; "" when it cannot be read.
std::string read_first_line(const std::string& path);
// The whole number on the file's first line; -1 when missing or not a number.
long read_long(const std::string& path);
// "net.core.rmem_max" -> "/proc/sys/net/core/rmem_max".
std::string sysctl_path(const std::string& name);

}  // namespace slabcast
