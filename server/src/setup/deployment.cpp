// The deployment file (docs/deployment.md) -> a Deployment, every field
// checked by json_file::field and named in any error, every stream of the
// volume given exactly one sender and one receiver.
#include "setup/deployment.h"

#include "slabcast/json_file.h"
#include "slabcast/publication.h"
#include "slabcast/run_codec.h"
#include "slabcast/send_order.h"
#include "slabcast/slab_file.h"
#include "slabcast/units.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>

namespace slabcast {
namespace {

using json_file::field;
using json_file::field_or;
using nlohmann::json;

// A field that becomes a word of a printed shell command: nothing that could
// split it or be read by a shell.
std::string word(const json& j, const char* key, const std::string& path) {
    static const std::string allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._,:/@%+=-[]";
    const std::string value = field<std::string>(j, key, path);
    const auto at = value.find_first_not_of(allowed);
    if (value.empty() || at != std::string::npos)
        throw std::runtime_error(path + ": \"" + key + "\" must be a non-empty word of letters, digits and ._,:/@%+=-[]" +
                                 (value.empty() ? "" : fmt::format(" (character {} is not)", at + 1)));
    return value;
}
std::string word_or(const json& j, const char* key, const std::string& fallback, const std::string& path) {
    return j.is_object() && j.contains(key) ? word(j, key, path) : fallback;
}

// Reads one deployment file; `config_` is its name, first in every error.
class DeploymentFile {
public:
    DeploymentFile(const std::string& text, std::string config) : config_(std::move(config)), j_(json_file::parse(text, config_)) {}

    Deployment read() {
        Deployment d;
        d.dataset = word(j_, "dataset", config_);
        d.key_file = word_or(j_, "key_file", "", config_);
        d.volumes.push_back(volume());
        d.controller = controller();
        return d;
    }

private:
    [[noreturn]] void bad(const std::string& problem) const { throw std::runtime_error(config_ + ": " + problem); }
    std::string at(const std::string& where) const { return config_ + ": " + where; }

    PlanVolume volume() {
        PlanVolume v;
        v.name = word(j_, "name", config_);
        const auto d = field<std::vector<std::int64_t>>(j_, "dims", config_);
        if (d.size() != 3) bad("\"dims\" must be [NX, NY, NZ]");
        for (auto n : d)
            if (n < 1 || n > kMaxAxis) bad("\"dims\": each size must be 1.." + std::to_string(kMaxAxis));
        v.dims = Dims{d[0], d[1], d[2]};
        v.slab_depth = field<int>(j_, "slab_depth", config_);
        if (v.slab_depth < 1) bad("\"slab_depth\" must be >= 1");
        if (const std::string problem = volume_problem(v.dims, v.slab_depth); !problem.empty())
            bad("\"dims\" and \"slab_depth\": " + problem);
        const int count = slab_count(v.dims, v.slab_depth);
        if (count > 1024) bad(fmt::format("{} streams (dims and slab_depth): at most 1024", count));
        v.rate = word_or(j_, "rate", v.rate, config_);
        v.wire = word_or(j_, "wire", v.wire, config_);
        if (v.wire != "quad" && v.wire != "run") bad("\"wire\" must be quad or run");
        v.codec = word_or(j_, "codec", v.codec, config_);
        try {
            if (run::parse_codec(v.codec).codec != run::Codec::None && v.wire != "run")
                bad("\"codec\" " + v.codec + " needs \"wire\": \"run\"");
        } catch (const std::invalid_argument& e) {
            bad(std::string("\"codec\": ") + e.what());
        }
        // "wan": the streams cross a path that may lose packets or be narrower
        // than the step rate: the progressive order, unless named; the nearest
        // fill is its partner, unless named.
        const bool wan = field_or<bool>(j_, "wan", false, config_);
        v.order = word_or(j_, "order", wan ? "progressive" : v.order, config_);
        v.fill = word_or(j_, "fill", v.order == "progressive" ? "nearest" : v.fill, config_);
        try {
            parse_send_order(v.order);
            parse_fill_rule(v.fill);
        } catch (const std::invalid_argument& e) {
            bad(e.what());  // "order 'random': expected scan, morton or progressive"
        }
        const json ports = field_or<json>(j_, "ports", json::object(), config_);
        v.ports.data = port_base(ports, "data", v.ports.data, count);
        v.ports.sync = port_base(ports, "sync", v.ports.sync, count);
        v.ports.stager = port_base(ports, "stager", v.ports.stager, 0);
        v.senders = hosts("senders");
        v.receivers = hosts("receivers");
        check_coverage(v.senders, count, "sender");
        check_coverage(v.receivers, count, "receiver");
        return v;
    }

    // A port base: itself and base + stream must be valid ports.
    int port_base(const json& ports, const char* key, int fallback, int streams) const {
        const int p = field_or<int>(ports, key, fallback, at("ports"));
        if (p < 1 || p > 65535 - streams) bad(fmt::format("port \"{}\" {} leaves no room for {} streams", key, p, streams));
        return p;
    }

    std::vector<PlanHost> hosts(const char* key) const {
        const json list = field<json>(j_, key, config_);
        if (!list.is_array() || list.empty()) bad(std::string("\"") + key + "\" must be a list of hosts");
        std::vector<PlanHost> out;
        for (const auto& h : list) {
            PlanHost host;
            host.name = word(h, "host", at(key));
            const std::string where = at(std::string(key) + " " + host.name);
            host.address = word(h, "address", where);
            host.streams_text = word(h, "streams", where);
            try {
                host.streams = parse_index_list(host.streams_text, kMaxAxis - 1, std::string(key) + " " + host.name + " streams");
            } catch (const std::invalid_argument& e) {
                bad(e.what());
            }
            host.cpus = word_or(h, "cpus", "", where);
            host.shm_dir = word_or(h, "shm_dir", "", where);
            host.buffers = field_or<int>(h, "buffers", 0, where);
            if (h.contains("buffers") && (host.buffers < kMinBuffers || host.buffers > kMaxBuffers))
                throw std::runtime_error(where + ": \"buffers\" must be " + std::to_string(kMinBuffers) + ".." +
                                         std::to_string(kMaxBuffers));
            host.readers = word_or(h, "readers", "", where);
            if (!host.readers.empty()) {
                int need = 0;
                try {
                    need = buffers_for_readers(parse_reader_mix(host.readers));
                } catch (const std::invalid_argument& e) {
                    throw std::runtime_error(where + ": \"readers\": " + e.what());
                }
                if (need > kMaxBuffers || (host.buffers && host.buffers < need))
                    throw std::runtime_error(where + ": \"readers\" " + host.readers + " need " + std::to_string(need) +
                                             " buffers a slab" +
                                             (host.buffers ? ", \"buffers\" gives " + std::to_string(host.buffers)
                                                           : ", more than " + std::to_string(kMaxBuffers)));
                if (!host.buffers) host.buffers = need;
            }
            host.staging = word_or(h, "staging", host.staging, where);
            host.budget = word_or(h, "budget", "", where);
            if (!host.budget.empty()) try {
                    parse_bytes(host.budget);  // sizes the stager's window in the plan's memory notes
                } catch (const std::invalid_argument& e) {
                    throw std::runtime_error(where + ": \"budget\": " + e.what());
                }
            host.rate = word_or(h, "rate", "", where);
            host.stager_port = field_or<int>(h, "stager_port", 0, where);
            if (h.contains("stager_port") && (host.stager_port < 1 || host.stager_port > 65535))
                throw std::runtime_error(where + ": \"stager_port\" must be 1..65535");
            out.push_back(host);
        }
        return out;
    }

    // Every stream of the volume exactly once among `hosts`.
    void check_coverage(const std::vector<PlanHost>& hosts, int count, const std::string& what) const {
        std::map<int, std::string> owner;
        for (const auto& h : hosts)
            for (int k : h.streams) {
                if (k >= count)
                    bad(what + " " + h.name + " lists stream " + std::to_string(k) + " but the volume has streams 0.." +
                        std::to_string(count - 1));
                if (owner.count(k)) bad("stream " + std::to_string(k) + " is on " + what + "s " + owner[k] + " and " + h.name);
                owner[k] = h.name;
            }
        for (int k = 0; k < count; ++k)
            if (!owner.count(k)) bad("no " + what + " for stream " + std::to_string(k));
    }

    PlanController controller() const {
        const json c = field<json>(j_, "controller", config_);
        const std::string where = at("controller");
        PlanController out;
        out.host = word(c, "host", where);
        out.address = word_or(c, "address", "", where);
        out.loop = field_or<bool>(c, "loop", false, where);
        if (c.contains("interval")) out.interval = field<double>(c, "interval", where);
        if (c.contains("count")) out.count = field<int>(c, "count", where);
        return out;
    }

    const std::string config_;
    const json j_;
};

}  // namespace

Deployment read_deployment(const std::string& json_text, const std::string& config_name) {
    return DeploymentFile(json_text, config_name).read();
}

}  // namespace slabcast
