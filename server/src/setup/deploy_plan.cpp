#include "setup/deploy_plan.h"

#include "setup/memory_plan.h"

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"
#include "slabcast/units.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <stdexcept>

namespace slabcast {
namespace {

using Argv = std::vector<std::string>;

void add(Argv& argv, const std::string& option, const std::string& value) {
    argv.push_back(option);
    argv.push_back(value);
}

// What every role that takes syncs is started with (README "Security"): with
// a key file the syncs are authenticated; with the controller's address,
// shufflers and stagers take syncs from it only.
void add_sync_security(Argv& argv, const Deployment& d, bool from_controller) {
    if (!d.key_file.empty()) add(argv, "--key-file", d.key_file);
    if (from_controller && !d.controller.address.empty()) add(argv, "--controller", d.controller.address);
}

int stager_port(const PlanVolume& v, const PlanHost& sender) {
    return sender.stager_port ? sender.stager_port : v.ports.stager;
}

std::string dims_text(const Dims& d) { return fmt::format("{},{},{}", d.nx, d.ny, d.nz); }

// A receiver takes data from its streams' senders only: one --allow for all
// when they share a sender address, else one per stream.
Argv receive_command(const Deployment&, const PlanVolume& v, const PlanHost& r,
                     const std::map<int, std::string>& sender_of) {
    Argv argv = {"slabcast", "receive", "--name", v.name, "--dims", dims_text(v.dims), "--slab-depth",
                 std::to_string(v.slab_depth), "--listen", r.address};
    for (int k : r.streams) add(argv, "--stream", fmt::format("{}:{}", k, v.ports.data + k));
    std::set<std::string> from;
    for (int k : r.streams) from.insert(sender_of.at(k));
    if (from.size() == 1) add(argv, "--allow", *from.begin());
    else
        for (int k : r.streams) add(argv, "--allow", fmt::format("{}={}", k, sender_of.at(k)));
    if (!r.cpus.empty()) add(argv, "--cpus", r.cpus);
    if (!r.shm_dir.empty()) add(argv, "--shm-dir", r.shm_dir);
    if (r.buffers) add(argv, "--buffers", std::to_string(r.buffers));
    if (v.fill != "previous") add(argv, "--fill", v.fill);
    return argv;
}

// What a role keeps in /dev/shm (slabs, staged steps; memory_plan.h)
// (docs/shared-memory.md), so that its memory is planned, not discovered.
std::string memory_note(const MemoryPart& p) {
    return fmt::format("{}: {} in {}", p.what, format_bytes(p.bytes), p.dir);
}

Argv stage_command(const Deployment& d, const PlanVolume& v, const PlanHost& s) {
    Argv argv = {"slabcast", "stage", "--dataset", d.dataset, "--staging", s.staging, "--streams", s.streams_text,
                 "--sync", fmt::format("{}:{}", s.address, stager_port(v, s))};
    if (!s.budget.empty()) add(argv, "--budget", s.budget);
    if (d.controller.loop) argv.push_back("--loop");
    add_sync_security(argv, d, true);
    return argv;
}

Argv shuffle_command(const Deployment& d, const PlanVolume& v, const PlanHost& s, int k,
                     const std::map<int, std::string>& receiver_of) {
    Argv argv = {"slabcast", "shuffle", "--stream", std::to_string(k),
                 "--to", fmt::format("{}:{}", receiver_of.at(k), v.ports.data + k),
                 "--staging", s.staging, "--dataset", d.dataset, "--slab-depth", std::to_string(v.slab_depth),
                 "--sync", fmt::format("{}:{}", s.address, v.ports.sync + k), "--rate", s.rate.empty() ? v.rate : s.rate};
    if (v.wire != "run") add(argv, "--wire", v.wire);
    if (v.codec != "none") add(argv, "--codec", v.codec);
    if (v.order != "scan") add(argv, "--order", v.order);
    add_sync_security(argv, d, true);
    return argv;
}

Argv control_command(const Deployment& d) {
    Argv argv = {"slabcast", "control", "--dataset", d.dataset};
    for (const PlanVolume& v : d.volumes)
        for (const PlanHost& s : v.senders) {
            for (int k : s.streams) add(argv, "--shuffler", fmt::format("{}:{}", s.address, v.ports.sync + k));
            add(argv, "--stager", fmt::format("{}:{}", s.address, stager_port(v, s)));
        }
    if (d.controller.interval) add(argv, "--interval", fmt::format("{}", *d.controller.interval));
    if (d.controller.loop) argv.push_back("--loop");
    if (d.controller.count) add(argv, "--count", std::to_string(*d.controller.count));
    add_sync_security(argv, d, false);
    return argv;
}

const char* section_of(const std::string& role) {
    if (role == "receive") return "receiver (start first)";
    if (role == "control") return "controller (start last)";
    return "sender: stager and shufflers";
}

}  // namespace

std::vector<RoleCommand> plan_roles(const Deployment& d) {
    std::vector<RoleCommand> out;
    std::vector<std::map<int, std::string>> receiver_of(d.volumes.size()), sender_of(d.volumes.size());
    for (std::size_t i = 0; i < d.volumes.size(); ++i) {
        for (const PlanHost& r : d.volumes[i].receivers)
            for (int k : r.streams) receiver_of[i][k] = r.address;
        for (const PlanHost& s : d.volumes[i].senders)
            for (int k : s.streams) sender_of[i][k] = s.address;
    }
    for (std::size_t i = 0; i < d.volumes.size(); ++i)
        for (const PlanHost& r : d.volumes[i].receivers)
            out.push_back({r.name, "receive", d.volumes[i].name, -1, receive_command(d, d.volumes[i], r, sender_of[i]),
                           memory_note(slabs_part(d.volumes[i], r))});
    for (std::size_t i = 0; i < d.volumes.size(); ++i)
        for (const PlanHost& s : d.volumes[i].senders) {
            out.push_back({s.name, "stage", d.volumes[i].name, -1, stage_command(d, d.volumes[i], s),
                           memory_note(staging_part(d, d.volumes[i], s))});
            for (int k : s.streams)
                out.push_back(
                    {s.name, "shuffle", d.volumes[i].name, k, shuffle_command(d, d.volumes[i], s, k, receiver_of[i]), ""});
        }
    out.push_back({d.controller.host, "control", "", -1, control_command(d), ""});
    return out;
}

std::string plan_commands(const std::string& json_text, const std::string& config_name, const std::string& only_host) {
    return plan_commands(read_deployment(json_text, config_name), config_name, only_host);
}

std::string plan_commands(const Deployment& d, const std::string& config_name, const std::string& only_host) {
    std::string out, last_section;
    bool printed = false;
    for (const RoleCommand& c : plan_roles(d)) {
        if (!only_host.empty() && c.host != only_host) continue;
        printed = true;
        const std::string section = "# " + c.host + ": " + section_of(c.role) + "\n";
        if (only_host.empty() && section != last_section) out += section;
        last_section = section;
        if (!c.note.empty()) out += "# " + c.note + "\n";
        out += fmt::format("{}\n", fmt::join(c.argv, " "));
    }
    if (!printed) throw std::runtime_error(config_name + ": no host named '" + only_host + "'");
    return out;
}

}  // namespace slabcast
