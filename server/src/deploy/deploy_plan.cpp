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
#include <vector>

namespace slabcast {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& config, const std::string& problem) {
    throw std::runtime_error(config + ": " + problem);
}

using json_file::field;
using json_file::field_or;

// What errors name: the file, then where in it ("plan.json: senders s1").
std::string at(const std::string& config, const std::string& where) {
    return where == "the deployment" ? config : config + ": " + where;
}

// A field that becomes a word of a printed shell command: nothing that could
// split it or be read by a shell.
std::string word(const std::string& value, const char* key, const std::string& path) {
    static const std::string allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._,:/@%+=-[]";
    const auto at = value.find_first_not_of(allowed);
    if (value.empty() || at != std::string::npos)
        throw std::runtime_error(path + ": \"" + key + "\" must be a non-empty word of letters, digits and ._,:/@%+=-[]" +
                                 (value.empty() ? "" : fmt::format(" (character {} is not)", at + 1)));
    return value;
}
std::string word(const json& j, const char* key, const std::string& path) {
    return word(field<std::string>(j, key, path), key, path);
}
std::string word_or(const json& j, const char* key, const std::string& fallback, const std::string& path) {
    return j.is_object() && j.contains(key) ? word(j, key, path) : fallback;
}

struct Host {
    std::string name, address;
    std::vector<int> streams;
    std::string streams_text;
    json spec;
};

std::vector<Host> hosts(const json& j, const char* key, const std::string& config) {
    const json list = field<json>(j, key, at(config, "the deployment"));
    if (!list.is_array() || list.empty()) bad(config, std::string("\"") + key + "\" must be a list of hosts");
    std::vector<Host> out;
    for (const auto& h : list) {
        Host host;
        host.name = word(h, "host", at(config, key));
        const std::string where = std::string(key) + " " + host.name;
        host.address = word(h, "address", at(config, where));
        host.streams_text = word(h, "streams", at(config, where));
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
    const int p = field_or<int>(j, key, fallback, at(config, "ports"));
    if (p < 1 || p > 65535 - streams) bad(config, fmt::format("port \"{}\" {} leaves no room for {} streams", key, p, streams));
    return p;
}

}  // namespace

std::string plan_commands(const std::string& json_text, const std::string& cfg, const std::string& only_host) {
    const json j = json_file::parse(json_text, cfg);
    const std::string name = word(j, "name", at(cfg, "the deployment"));
    const std::string dataset = word(j, "dataset", at(cfg, "the deployment"));
    const auto d = field<std::vector<std::int64_t>>(j, "dims", at(cfg, "the deployment"));
    if (d.size() != 3) bad(cfg, "\"dims\" must be [NX, NY, NZ]");
    for (auto n : d)
        if (n < 1 || n > (1 << 20)) bad(cfg, "\"dims\": each size must be 1..1048576");
    const Dims dims{d[0], d[1], d[2]};
    const int depth = field<int>(j, "slab_depth", at(cfg, "the deployment"));
    if (depth < 1) bad(cfg, "\"slab_depth\" must be >= 1");
    const int count = slab_count(dims, depth);
    if (count > 1024) bad(cfg, fmt::format("{} streams (dims and slab_depth): at most 1024", count));
    const std::string rate = word_or(j, "rate", "2.81G", at(cfg, "the deployment"));
    const json ports = field_or<json>(j, "ports", json::object(), at(cfg, "the deployment"));
    const int data_port = port(ports, "data", 9000, count, cfg), sync_port = port(ports, "sync", 9100, count, cfg),
              stager_port = port(ports, "stager", 9200, 0, cfg);
    const auto senders = hosts(j, "senders", cfg);
    const auto receivers = hosts(j, "receivers", cfg);
    check_coverage(senders, count, "sender", cfg);
    check_coverage(receivers, count, "receiver", cfg);
    const json controller = field<json>(j, "controller", at(cfg, "the deployment"));
    const std::string controller_host = word(controller, "host", at(cfg, "controller"));
    const std::string dims_text = fmt::format("{},{},{}", dims.nx, dims.ny, dims.nz);

    std::map<int, std::string> receiver_of, sender_of;
    for (const auto& r : receivers)
        for (int k : r.streams) receiver_of[k] = r.address;
    for (const auto& s : senders)
        for (int k : s.streams) sender_of[k] = s.address;
    // Security (README "Security"): receivers take data from their streams'
    // senders only; with "key_file", syncs are authenticated; with the
    // controller's "address", shufflers and stagers take syncs from it only.
    const std::string key_file = word_or(j, "key_file", "", at(cfg, "the deployment"));
    const std::string auth = key_file.empty() ? "" : " --key-file " + key_file;
    const std::string controller_address = word_or(controller, "address", "", at(cfg, "controller"));
    const std::string from_controller = controller_address.empty() ? "" : " --controller " + controller_address;
    const bool loop = field_or<bool>(controller, "loop", false, at(cfg, "controller"));

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
        if (r.spec.contains("cpus")) out << " --cpus " << word(r.spec, "cpus", at(cfg, where));
        if (r.spec.contains("shm_dir")) out << " --shm-dir " << word(r.spec, "shm_dir", at(cfg, where));
        out << "\n";
    }
    for (const auto& s : senders) {
        if (!section(s.name, "sender: stager and shufflers")) continue;
        const std::string where = "senders " + s.name;
        const std::string staging = word_or(s.spec, "staging", "/dev/shm/slabcast-staging", at(cfg, where));
        const int stager = field_or<int>(s.spec, "stager_port", stager_port, at(cfg, where));
        if (stager < 1 || stager > 65535) bad(cfg, where + ": \"stager_port\" must be 1..65535");
        out << "slabcast stage --dataset " << dataset << " --staging " << staging << " --streams " << s.streams_text
            << " --sync " << s.address << ":" << stager;
        if (s.spec.contains("budget")) out << " --budget " << word(s.spec, "budget", at(cfg, where));
        if (loop) out << " --loop";
        out << auth << from_controller << "\n";
        const std::string sender_rate = word_or(s.spec, "rate", rate, at(cfg, where));
        for (int k : s.streams)
            out << "slabcast shuffle --stream " << k << " --to " << receiver_of[k] << ":" << data_port + k
                << " --staging " << staging << " --dataset " << dataset << " --slab-depth " << depth << " --sync "
                << s.address << ":" << sync_port + k << " --rate " << sender_rate << auth << from_controller << "\n";
    }
    if (section(controller_host, "controller (start last)")) {
        out << "slabcast control --dataset " << dataset;
        for (const auto& s : senders) {
            for (int k : s.streams) out << " --shuffler " << s.address << ":" << sync_port + k;
            out << " --stager " << s.address << ":" << field_or<int>(s.spec, "stager_port", stager_port, at(cfg, "senders"));
        }
        if (controller.contains("interval"))
            out << " --interval " << field<double>(controller, "interval", at(cfg, "controller"));
        if (loop) out << " --loop";
        if (controller.contains("count")) out << " --count " << field<int>(controller, "count", at(cfg, "controller"));
        out << auth << "\n";
    }
    if (!printed) bad(cfg, "no host named '" + only_host + "'");
    return out.str();
}

}  // namespace slabcast
