#include "deploy/deploy_plan.h"

#include "slabcast/json_file.h"
#include "slabcast/units.h"
#include "slabcast/volume.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace slabcast {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& config, const std::string& problem) {
    throw std::runtime_error(config + ": " + problem);
}

// One field of the file, of type T, checked: a wrong type or a number that is
// not a whole `int` names the field instead of leaking a JSON library message
// (or, for a float into an int, an undefined cast: see docs/fuzzing.md).
template <typename T>
T field(const json& v, const char* key, const std::string& config, const std::string& where) {
    auto whole = [&](const json& e) {
        try {
            json_file::whole_number<int>(e, key);
        } catch (const std::runtime_error&) {
            bad(config, where + ": \"" + key + "\" must hold whole numbers");
        }
    };
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) whole(v);
    if constexpr (std::is_same_v<T, std::vector<std::int64_t>>)
        if (v.is_array())
            for (const auto& e : v) whole(e);
    if constexpr (std::is_same_v<T, double>)
        if (!v.is_number()) bad(config, where + ": \"" + key + "\" must be a number");
    if constexpr (std::is_same_v<T, bool>)
        if (!v.is_boolean()) bad(config, where + ": \"" + key + "\" must be true or false");
    try {
        T value = v.get<T>();
        if constexpr (std::is_same_v<T, std::string>) {
            // Every string here ends up as a word of a printed shell command:
            // nothing that could split it or be read by a shell.
            static const std::string allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._,:/@%+=-[]";
            const auto at = value.find_first_not_of(allowed);
            if (value.empty() || at != std::string::npos)
                bad(config, where + ": \"" + key + "\" must be a non-empty word of letters, digits and ._,:/@%+=-[]" +
                                (value.empty() ? "" : fmt::format(" (character {} is not)", at + 1)));
        }
        return value;
    } catch (const json::exception&) {
        bad(config, where + ": \"" + key + "\" has the wrong type");
    }
}

template <typename T>
T get(const json& j, const char* key, const std::string& config, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) bad(config, where + " has no \"" + key + "\"");
    return field<T>(j.at(key), key, config, where);
}

// An optional field: `fallback` when absent.
template <typename T>
T get_or(const json& j, const char* key, T fallback, const std::string& config, const std::string& where) {
    if (!j.is_object() || !j.contains(key)) return fallback;
    return field<T>(j.at(key), key, config, where);
}

struct Host {
    std::string name, address;
    std::vector<int> streams;
    std::string streams_text;
    json spec;
};

std::vector<Host> hosts(const json& j, const char* key, const std::string& config) {
    const json list = get<json>(j, key, config, "the deployment");
    if (!list.is_array() || list.empty()) bad(config, std::string("\"") + key + "\" must be a list of hosts");
    std::vector<Host> out;
    for (const auto& h : list) {
        Host host;
        host.name = get<std::string>(h, "host", config, key);
        const std::string where = std::string(key) + " " + host.name;
        host.address = get<std::string>(h, "address", config, where);
        host.streams_text = get<std::string>(h, "streams", config, where);
        try {
            host.streams = parse_index_list(host.streams_text, kMaxAxis - 1, where + " streams");
        } catch (const std::invalid_argument& e) {
            bad(config, e.what());
        }
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

// A port base: itself and base + stream must be valid ports.
int port(const json& j, const char* key, int fallback, int streams, const std::string& config) {
    const int p = get_or<int>(j, key, fallback, config, "ports");
    if (p < 1 || p > 65535 - streams) bad(config, fmt::format("port \"{}\" {} leaves no room for {} streams", key, p, streams));
    return p;
}

}  // namespace

std::string plan_commands(const std::string& json_text, const std::string& cfg, const std::string& only_host) {
    json j;
    try {
        j = json::parse(json_text);
    } catch (const json::exception& e) {
        bad(cfg, std::string("not valid JSON (") + e.what() + ")");
    }
    const std::string name = get<std::string>(j, "name", cfg, "the deployment");
    const std::string dataset = get<std::string>(j, "dataset", cfg, "the deployment");
    const auto d = get<std::vector<std::int64_t>>(j, "dims", cfg, "the deployment");
    if (d.size() != 3) bad(cfg, "\"dims\" must be [NX, NY, NZ]");
    for (auto n : d)
        if (n < 1 || n > (1 << 20)) bad(cfg, "\"dims\": each size must be 1..1048576");
    const Dims dims{d[0], d[1], d[2]};
    const int depth = get<int>(j, "slab_depth", cfg, "the deployment");
    if (depth < 1) bad(cfg, "\"slab_depth\" must be >= 1");
    const int count = slab_count(dims, depth);
    if (count > 1024) bad(cfg, fmt::format("{} streams (dims and slab_depth): at most 1024", count));
    const std::string rate = get_or<std::string>(j, "rate", "2.81G", cfg, "the deployment");
    const json ports = get_or<json>(j, "ports", json::object(), cfg, "the deployment");
    const int data_port = port(ports, "data", 9000, count, cfg), sync_port = port(ports, "sync", 9100, count, cfg),
              stager_port = port(ports, "stager", 9200, 0, cfg);
    const auto senders = hosts(j, "senders", cfg);
    const auto receivers = hosts(j, "receivers", cfg);
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
    const std::string key_file = get_or<std::string>(j, "key_file", "", cfg, "the deployment");
    const std::string auth = key_file.empty() ? "" : " --key-file " + key_file;
    const std::string controller_address = get_or<std::string>(controller, "address", "", cfg, "controller");
    const std::string from_controller = controller_address.empty() ? "" : " --controller " + controller_address;
    const bool loop = get_or<bool>(controller, "loop", false, cfg, "controller");

    std::ostringstream out;
    bool printed = false;
    auto section = [&](const std::string& host, const std::string& role) {
        const bool show = only_host.empty() || only_host == host;
        if (show && only_host.empty()) out << "# " << host << ": " << role << "\n";
        printed |= show;
        return show;
    };
    for (const auto& r : receivers) {
        if (!section(r.name, "receiver (start first)")) continue;
        const std::string where = "receivers " + r.name;
        out << "slabcast receive --name " << name << " --dims " << dims_text << " --slab-depth " << depth
            << " --listen " << r.address;
        for (int k : r.streams) out << " --stream " << k << ":" << data_port + k;
        std::set<std::string> from;
        for (int k : r.streams) from.insert(sender_of[k]);
        if (from.size() == 1) out << " --allow " << *from.begin();
        else
            for (int k : r.streams) out << " --allow " << k << "=" << sender_of[k];
        if (r.spec.contains("cpus")) out << " --cpus " << get<std::string>(r.spec, "cpus", cfg, where);
        if (r.spec.contains("shm_dir")) out << " --shm-dir " << get<std::string>(r.spec, "shm_dir", cfg, where);
        out << "\n";
    }
    for (const auto& s : senders) {
        if (!section(s.name, "sender: stager and shufflers")) continue;
        const std::string where = "senders " + s.name;
        const std::string staging = get_or<std::string>(s.spec, "staging", "/dev/shm/slabcast-staging", cfg, where);
        const int stager = get_or<int>(s.spec, "stager_port", stager_port, cfg, where);
        if (stager < 1 || stager > 65535) bad(cfg, where + ": \"stager_port\" must be 1..65535");
        out << "slabcast stage --dataset " << dataset << " --staging " << staging << " --streams " << s.streams_text
            << " --sync " << s.address << ":" << stager;
        if (s.spec.contains("budget")) out << " --budget " << get<std::string>(s.spec, "budget", cfg, where);
        if (loop) out << " --loop";
        out << auth << from_controller << "\n";
        const std::string sender_rate = get_or<std::string>(s.spec, "rate", rate, cfg, where);
        for (int k : s.streams)
            out << "slabcast shuffle --stream " << k << " --to " << receiver_of[k] << ":" << data_port + k
                << " --staging " << staging << " --dataset " << dataset << " --slab-depth " << depth << " --sync "
                << s.address << ":" << sync_port + k << " --rate " << sender_rate << auth << from_controller << "\n";
    }
    if (section(controller_host, "controller (start last)")) {
        out << "slabcast control --dataset " << dataset;
        for (const auto& s : senders) {
            for (int k : s.streams) out << " --shuffler " << s.address << ":" << sync_port + k;
            out << " --stager " << s.address << ":" << get_or<int>(s.spec, "stager_port", stager_port, cfg, "senders");
        }
        if (controller.contains("interval"))
            out << " --interval " << get<double>(controller, "interval", cfg, "controller");
        if (loop) out << " --loop";
        if (controller.contains("count")) out << " --count " << get<int>(controller, "count", cfg, "controller");
        out << auth << "\n";
    }
    if (!printed) bad(cfg, "no host named '" + only_host + "'");
    return out.str();
}

}  // namespace slabcast
