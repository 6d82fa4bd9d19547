// `slabcast plan`: one JSON file describes a whole deployment (hosts, streams,
// ports, rates); plan prints the command each host runs, in start order
// (receivers, then senders, then the controller). See docs/deployment.md.
#include "numa_placement.h"
#include "roles.h"

#include "slabcast/volume.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <type_traits>
#include <sstream>

namespace slabcast {
namespace {

using nlohmann::json;

struct PlanOptions {
    std::string config;
    std::string host;
};

struct Host {
    std::string name, address;
    std::vector<int> streams;
    json spec;
};

[[noreturn]] void bad(const std::string& config, const std::string& problem) {
    throw std::runtime_error(config + ": " + problem);
}

template <typename T>
T get(const json& j, const char* key, const std::string& config, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) bad(config, where + " has no \"" + key + "\"");
    const json& v = j.at(key);
    // A float into an int would be an undefined cast (see docs/fuzzing.md).
    auto whole = [&](const json& e) {
        if (!e.is_number_integer() || e.get<std::int64_t>() < std::numeric_limits<int>::min() ||
            e.get<std::int64_t>() > std::numeric_limits<int>::max())
            bad(config, where + ": \"" + key + "\" must hold whole numbers");
    };
    if constexpr (std::is_integral_v<T>) whole(v);
    if constexpr (std::is_same_v<T, std::vector<std::int64_t>>)
        if (v.is_array())
            for (const auto& e : v) whole(e);
    try {
        return v.get<T>();
    } catch (const json::exception&) {
        bad(config, where + ": \"" + key + "\" has the wrong type");
    }
}

std::vector<Host> hosts(const json& j, const char* key, const std::string& config, bool need_streams) {
    std::vector<Host> out;
    for (const auto& h : get<json>(j, key, config, "the deployment")) {
        Host host;
        host.name = get<std::string>(h, "host", config, key);
        const std::string where = std::string(key) + " " + host.name;
        host.address = get<std::string>(h, "address", config, where);
        if (need_streams) host.streams = parse_index_list(get<std::string>(h, "streams", config, where), where + " streams");
        host.spec = h;
        out.push_back(host);
    }
    return out;
}

// Every stream of the volume exactly once among `hosts`.
void check_coverage(const std::vector<Host>& hosts, int count, const std::string& what, const std::string& config) {
    std::map<int, std::string> owner;
    for (const auto& h : hosts)
        for (int k : h.streams) {
            if (k >= count) bad(config, what + " " + h.name + " lists stream " + std::to_string(k) +
                                            " but the volume has streams 0.." + std::to_string(count - 1));
            if (owner.count(k)) bad(config, "stream " + std::to_string(k) + " is on " + what + "s " + owner[k] +
                                                " and " + h.name);
            owner[k] = h.name;
        }
    for (int k = 0; k < count; ++k)
        if (!owner.count(k)) bad(config, "no " + what + " for stream " + std::to_string(k));
}

int run_plan(const PlanOptions& o) {
    std::ifstream in(o.config);
    if (!in) throw std::runtime_error(o.config + ": cannot open");
    json j;
    try {
        j = json::parse(in);
    } catch (const json::exception& e) {
        bad(o.config, std::string("not valid JSON (") + e.what() + ")");
    }
    const std::string& cfg = o.config;
    const std::string name = get<std::string>(j, "name", cfg, "the deployment");
    const std::string dataset = get<std::string>(j, "dataset", cfg, "the deployment");
    const auto d = get<std::vector<std::int64_t>>(j, "dims", cfg, "the deployment");
    if (d.size() != 3) bad(cfg, "\"dims\" must be [NX, NY, NZ]");
    const Dims dims{d[0], d[1], d[2]};
    const int depth = get<int>(j, "slab_depth", cfg, "the deployment");
    const int count = slab_count(dims, depth);
    const std::string rate = j.value("rate", std::string("2.81G"));
    const json ports = j.value("ports", json::object());
    const int data_port = ports.value("data", 9000), sync_port = ports.value("sync", 9100),
              stager_port = ports.value("stager", 9200);
    const auto senders = hosts(j, "senders", cfg, true);
    const auto receivers = hosts(j, "receivers", cfg, true);
    check_coverage(senders, count, "sender", cfg);
    check_coverage(receivers, count, "receiver", cfg);
    const json controller = get<json>(j, "controller", cfg, "the deployment");
    const std::string controller_host = get<std::string>(controller, "host", cfg, "controller");
    const std::string dims_text = fmt::format("{},{},{}", dims.nx, dims.ny, dims.nz);

    std::map<int, std::string> receiver_of, sender_of;
    for (const auto& r : receivers)
        for (int k : r.streams) receiver_of[k] = r.address;
    for (const auto& s : senders)
        for (int k : s.streams) sender_of[k] = s.address;
    // Security (README "Security"): receivers take data from their streams'
    // senders only; with "key_file", syncs are authenticated; with the
    // controller's "address", shufflers and stagers take syncs from it only.
    const std::string key_file = j.contains("key_file") ? get<std::string>(j, "key_file", cfg, "the deployment") : "";
    const std::string auth = key_file.empty() ? "" : " --key-file " + key_file;
    const std::string from_controller =
        controller.contains("address") ? " --controller " + get<std::string>(controller, "address", cfg, "controller") : "";

    std::ostringstream out;
    bool printed = false;
    auto section = [&](const std::string& host, const std::string& role) {
        const bool show = o.host.empty() || o.host == host;
        if (show && o.host.empty()) out << "# " << host << ": " << role << "\n";
        printed |= show;
        return show;
    };
    for (const auto& r : receivers) {
        if (!section(r.name, "receiver (start first)")) continue;
        out << "slabcast receive --name " << name << " --dims " << dims_text << " --slab-depth " << depth
            << " --listen " << r.address;
        for (int k : r.streams) out << " --stream " << k << ":" << data_port + k;
        std::set<std::string> from;
        for (int k : r.streams) from.insert(sender_of[k]);
        if (from.size() == 1) out << " --allow " << *from.begin();
        else
            for (int k : r.streams) out << " --allow " << k << "=" << sender_of[k];
        if (r.spec.contains("cpus")) out << " --cpus " << r.spec["cpus"].get<std::string>();
        if (r.spec.contains("shm_dir")) out << " --shm-dir " << r.spec["shm_dir"].get<std::string>();
        out << "\n";
    }
    for (const auto& s : senders) {
        if (!section(s.name, "sender: stager and shufflers")) continue;
        const std::string staging = s.spec.value("staging", std::string("/dev/shm/slabcast-staging"));
        const int stager = s.spec.value("stager_port", stager_port);
        out << "slabcast stage --dataset " << dataset << " --staging " << staging << " --streams "
            << s.spec["streams"].get<std::string>() << " --sync " << s.address << ":" << stager;
        if (s.spec.contains("budget")) out << " --budget " << s.spec["budget"].get<std::string>();
        if (controller.value("loop", false)) out << " --loop";
        out << auth << from_controller << "\n";
        for (int k : s.streams)
            out << "slabcast shuffle --stream " << k << " --to " << receiver_of[k] << ":" << data_port + k
                << " --staging " << staging << " --dataset " << dataset << " --slab-depth " << depth << " --sync "
                << s.address << ":" << sync_port + k << " --rate " << s.spec.value("rate", rate) << auth
                << from_controller << "\n";
    }
    if (section(controller_host, "controller (start last)")) {
        out << "slabcast control --dataset " << dataset;
        for (const auto& s : senders) {
            for (int k : s.streams) out << " --shuffler " << s.address << ":" << sync_port + k;
            out << " --stager " << s.address << ":" << s.spec.value("stager_port", stager_port);
        }
        if (controller.contains("interval")) out << " --interval " << controller["interval"].get<double>();
        if (controller.value("loop", false)) out << " --loop";
        if (controller.contains("count")) out << " --count " << get<int>(controller, "count", cfg, "controller");
        out << auth << "\n";
    }
    if (!printed) bad(cfg, "no host named '" + o.host + "'");
    std::cout << out.str();
    return 0;
}

}  // namespace

void register_plan(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* c = root.add_subcommand("plan", "print each host's commands for a deployment described in one JSON file");
    c->add_option("config", o->config, "deployment file (docs/deployment.md)")->required();
    c->add_option("--host", o->host, "print only this host's commands");
    c->callback([o, &run] { run = [o] { return run_plan(*o); }; });
}

}  // namespace slabcast
