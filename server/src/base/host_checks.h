// Host settings that limit line-rate UDP, each read and judged in one place:
// `slabcast tune` prints them all, and each role warns at startup about the
// ones that limit it (Balman et al., 2012, section 4.5: the demo needed hand tuning).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace slabcast {

struct HostFinding {
    std::string what, now, advice;  // advice empty: fine as it is
};

struct SysctlWant {
    const char* name;
    long want;
    const char* why;
};
// Receiver buffers of 64 MiB (receive --rcvbuf-mb), sender 16 MiB, and a
// backlog deep enough for bursts of 9000-byte frames at 100 Gbit/s.
constexpr SysctlWant kBacklogSysctl = {"net.core.netdev_max_backlog", 250000,
                                       "packets queued per CPU before the kernel drops them"};
constexpr SysctlWant kWantedSysctls[] = {
    {"net.core.rmem_max", 64L << 20, "receive socket buffers (receive asks for 64 MiB)"},
    {"net.core.wmem_max", 16L << 20, "send socket buffers (shuffle asks for 16 MiB)"},
    kBacklogSysctl,
};

std::string default_interface();  // the default route's, else "lo"

HostFinding check_sysctl(const SysctlWant& s);
HostFinding check_mtu(const std::string& interface);
HostFinding check_irqbalance();
HostFinding check_irqs(const std::string& interface);
HostFinding check_governor();
HostFinding check_numa(const std::string& interface);
HostFinding check_offloads();
// A staging directory on tmpfs with 4 KiB pages costs a page-table entry per
// 4 KiB of every new step, each first touched by the shuffler.
HostFinding check_staging_pages(const std::string& staging);

// Room in a tmpfs (/dev/shm) for what a role is about to place there. A page
// faulted in on a full tmpfs is a SIGBUS, not an error code: the receiver and
// the stager check before they write, and reserve with fallocate where they
// can (it fails cleanly with ENOSPC), so a full /dev/shm is a message.
// What an unprivileged process may still allocate in `dir`'s file system
// (statvfs: f_bavail * f_frsize); throws std::runtime_error naming `dir`.
std::uint64_t free_bytes(const std::string& dir);
// Throws std::runtime_error("DIR has X free, WHAT need Y") when `need` does not fit.
void require_free_space(const std::string& dir, std::uint64_t need, const std::string& what);

// Throws std::runtime_error unless `dir` is a directory (not a symbolic link)
// owned by this user and not writable by others. /dev/shm is writable by all:
// a directory someone else made there first would let them replace the files
// a role writes and a renderer trusts, or plant symbolic links among them. A
// sticky directory anyone may write (/dev/shm itself, a tmpfs mounted for
// staging) is let through with a warning: there no one can replace another's
// files.
void require_own_directory(const std::string& dir);

// Logs a warning for each finding that has advice, prefixed by `role`.
void warn_limits(const std::string& role, const std::vector<HostFinding>& findings);

}  // namespace slabcast
