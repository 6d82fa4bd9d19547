#include "setup/memory_plan.h"

#include "base/host_checks.h"

#include "slabcast/descriptor.h"
#include "slabcast/memory_info.h"
#include "slabcast/slab_file.h"
#include "slabcast/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace slabcast {

std::uint64_t HostMemory::total() const {
    std::uint64_t sum = 0;
    for (const MemoryPart& p : parts) sum += p.bytes;
    return sum;
}

MemoryPart slabs_part(const PlanVolume& v, const PlanHost& r) {
    const int buffers = r.buffers ? r.buffers : kDefaultBuffers;
    std::uint64_t total = 0;
    for (int k : r.streams) {
        const SlabGeometry g = slab_geometry(v.dims, v.slab_depth, k, 1);
        SlabLayout layout;
        slab_layout(static_cast<std::uint64_t>(v.dims.plane()) * static_cast<std::uint64_t>(g.stored_planes()), buffers,
                    layout);
        total += layout.file_bytes;
    }
    return {fmt::format("{} slab(s) of {} x {} buffers", r.streams.size(), v.name, buffers),
            r.shm_dir.empty() ? kDefaultShmDir : r.shm_dir, total};
}

MemoryPart staging_part(const Deployment& d, const PlanVolume& v, const PlanHost& s) {
    std::uint64_t step = 0;
    for (const PlanVolume& each : d.volumes)
        step = std::max(step, static_cast<std::uint64_t>(each.dims.count()) * 4);
    const std::uint64_t window = s.budget.empty() ? 1 : std::max<std::uint64_t>(1, parse_bytes(s.budget) / step);
    return {s.budget.empty() ? fmt::format("at least 1 staged step of {} (no budget)", v.name)
                             : fmt::format("up to {} staged step(s) of {} (budget {})", window, v.name, s.budget),
            s.staging, window * step};
}

std::vector<HostMemory> plan_memory(const Deployment& d) {
    std::map<std::string, HostMemory> hosts;
    auto part = [&](const PlanHost& host, MemoryPart p) {
        HostMemory& h = hosts[host.name];
        h.host = host.name;
        h.loopback = h.loopback && (host.address.rfind("127.", 0) == 0 || host.address == "::1" ||
                                    host.address == "localhost");
        h.parts.push_back(std::move(p));
    };
    for (const PlanVolume& v : d.volumes) {
        for (const PlanHost& r : v.receivers) part(r, slabs_part(v, r));
        for (const PlanHost& s : v.senders) part(s, staging_part(d, v, s));
    }
    std::vector<HostMemory> out;
    for (auto& [name, h] : hosts) out.push_back(std::move(h));
    return out;
}

std::string plan_memory_problem(const Deployment& d, const std::string& only_host) {
    std::vector<HostMemory> here;
    for (HostMemory& h : plan_memory(d))
        if (only_host.empty() ? h.loopback : h.host == only_host) here.push_back(std::move(h));
    if (here.empty()) return "";
    std::string names;
    for (const HostMemory& h : here) names += (names.empty() ? "" : ", ") + h.host;
    const std::string problem = memory_problem(here, 0, "", room_here(here.front().parts.front().dir));
    return problem.empty() ? "" : names + " cannot run on this machine: " + problem;
}

MachineRoom room_here(const std::string& dir) {
    MachineRoom room;
    room.ram_available = mem_available_bytes();
    // The directory may not exist yet: its nearest existing parent's file system.
    std::filesystem::path p = dir;
    std::error_code ec;
    while (!p.empty() && !std::filesystem::exists(p, ec)) p = p.parent_path();
    room.shm_dir = p.empty() ? "/" : p.string();
    room.shm_free = free_bytes(room.shm_dir);
    return room;
}

std::string memory_problem(const std::vector<HostMemory>& hosts, std::uint64_t other_ram,
                           const std::string& other_what, const MachineRoom& room) {
    std::uint64_t shm = 0;
    std::string parts;
    for (const HostMemory& h : hosts)
        for (const MemoryPart& p : h.parts) {
            shm += p.bytes;
            parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", p.what, format_bytes(p.bytes));
        }
    std::string problem;
    if (shm > room.shm_free)
        problem += fmt::format("{} has {} free, and {} need {}. ", room.shm_dir, format_bytes(room.shm_free), parts,
                               format_bytes(shm));
    if (shm + other_ram + kMemoryHeadroom > room.ram_available)
        problem += fmt::format("This machine has {} of memory available, and {} ({}){} need {}, plus {} kept free. ",
                               format_bytes(room.ram_available), "the slabs and staged steps", format_bytes(shm),
                               other_ram ? " plus " + other_what + " (" + format_bytes(other_ram) + ")" : "",
                               format_bytes(shm + other_ram), format_bytes(kMemoryHeadroom));
    if (!problem.empty()) problem.pop_back();
    return problem;
}

}  // namespace slabcast
