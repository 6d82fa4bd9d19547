// Thread pinning and NUMA-local memory for the receiver (Balman et al., 2012, section 4.5:
// receiver, its memory and its renderer on the NIC's NUMA node).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace slabcast {

// CPUs this process may run on, in order.
std::vector<int> allowed_cpus();

// The interface of the default route; empty when there is none.
std::string default_route_interface();
// The network interface that holds local address `ip` (IPv4 or IPv6); for a
// wildcard address (0.0.0.0, ::), the interface of the default route. Empty
// when none matches.
std::string interface_of_address(const std::string& ip);
// The NUMA node a NIC is attached to, from /sys/class/net/IF/device/numa_node;
// -1 for a virtual interface (loopback, veth) or a machine without NUMA.
int numa_node_of_interface(const std::string& interface);
// The allowed CPUs of a NUMA node (empty if none).
std::vector<int> allowed_cpus_of_node(int node);

// The receiver's stream CPUs: `cpus` (receive --cpus, e.g. "0,2-3") when
// given, else the CPUs of the NUMA node of `nic`, the NIC that carries the
// listen address `address`, else every allowed CPU. Says which and why, since
// placement makes or breaks line rate.
std::vector<int> choose_stream_cpus(const std::string& cpus, const std::string& nic, const std::string& address);
// NUMA node of a CPU, or -1 when libnuma is unavailable.
int numa_node_of(int cpu);
// Pins the calling thread to one CPU; throws std::runtime_error on failure.
void pin_current_thread(int cpu);
// Binds [addr, addr+bytes) to `node` (when libnuma works and node >= 0), then
// faults every page in for writing without changing its contents, so the first
// packets do not pay for page faults and the pages land on that node. The range
// maps bytes [offset, offset+bytes) of the file `fd`. Throws std::runtime_error
// when the pages cannot be had (a full tmpfs, no memory): touching them would
// have been a SIGBUS.
void bind_and_prefault(void* addr, std::size_t bytes, int node, int fd, off_t offset);

}  // namespace slabcast
