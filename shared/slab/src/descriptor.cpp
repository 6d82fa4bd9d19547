#include "slabcast/descriptor.h"

#include "slabcast/confined_path.h"
#include "slabcast/json_file.h"

#include <set>

namespace slabcast {

std::string descriptor_path(const std::string& dir, const std::string& name) { return dir + "/" + name + ".slabcast"; }

using nlohmann::json;
using json_file::field;

Descriptor parse_descriptor(const std::string& text, const std::string& path) {
    const json j = json_file::parse(text, path);
    if (!j.is_object()) throw std::runtime_error(path + ": not a slabcast descriptor (not a JSON object)");
    if (!j.contains("format") || j["format"] != "slabcast")
        throw std::runtime_error(path + ": not a slabcast descriptor (no \"format\": \"slabcast\")");
    const int version = field<int>(j, "version", path);
    if (version != kDescriptorVersion)
        throw std::runtime_error(path + ": descriptor version " + std::to_string(version) +
                                 ", this build reads version " + std::to_string(kDescriptorVersion));
    Descriptor d;
    d.name = field<std::string>(j, "name", path);
    d.field = field<std::string>(j, "field", path);
    const auto dims = field<std::vector<std::int64_t>>(j, "dims", path);
    if (dims.size() != 3 || dims[0] < 1 || dims[1] < 1 || dims[2] < 1)
        throw std::runtime_error(path + ": 'dims' must be three positive sizes");
    d.dims = Dims{dims[0], dims[1], dims[2]};
    d.slab_depth = field<int>(j, "slab_depth", path);
    if (d.slab_depth < 1) throw std::runtime_error(path + ": 'slab_depth' must be >= 1");
    // Within kMaxAxis the reader's extents fit VTK's int and no product of
    // sizes wraps (2^32 would have wrapped to an empty output).
    if (const std::string p = volume_problem(d.dims, d.slab_depth); !p.empty())
        throw std::runtime_error(path + ": " + p);
    d.ghost_planes = field<int>(j, "ghost_planes", path);
    if (d.ghost_planes < 0 || d.ghost_planes > d.slab_depth)
        throw std::runtime_error(path + ": 'ghost_planes' must be 0.." + std::to_string(d.slab_depth) +
                                 " (the slab depth)");
    for (const char* key : {"origin", "spacing"}) {
        if (!j.contains(key)) continue;
        const auto v = field<std::vector<double>>(j, key, path);
        if (v.size() != 3) throw std::runtime_error(path + ": '" + key + "' must have three numbers");
        double* target = std::string(key) == "origin" ? d.origin : d.spacing;
        for (int i = 0; i < 3; ++i) target[i] = v[i];
    }
    const int count = slab_count(d.dims, d.slab_depth);
    std::set<int> seen;
    for (const auto& s : field<json>(j, "slabs", path)) {
        SlabEntry e;
        e.index = field<int>(s, "index", path);
        e.file = field<std::string>(s, "file", path);
        if (e.index < 0 || e.index >= count)
            throw std::runtime_error(path + ": slab index " + std::to_string(e.index) + " outside 0.." +
                                     std::to_string(count - 1));
        // The reader opens it beneath the descriptor's directory (open_beneath);
        // a name that leads elsewhere is refused here, by name.
        if (!is_plain_name(e.file)) {
            const std::string quoted = json(e.file).dump(-1, ' ', false, json::error_handler_t::replace);
            throw std::runtime_error(path + ": slab " + std::to_string(e.index) + "'s file " + quoted +
                                     " must be a plain file name in the descriptor's directory (no '/', no '..')");
        }
        if (!seen.insert(e.index).second)
            throw std::runtime_error(path + ": slab " + std::to_string(e.index) + " listed twice");
        d.slabs.push_back(e);
    }
    return d;
}

Descriptor read_descriptor(const std::string& path) { return parse_descriptor(json_file::read_text(path), path); }

std::string descriptor_to_json(const Descriptor& d) {
    json slabs = json::array();
    for (const auto& s : d.slabs) slabs.push_back({{"index", s.index}, {"file", s.file}});
    json j = {{"format", "slabcast"},
              {"version", kDescriptorVersion},
              {"name", d.name},
              {"field", d.field},
              {"dims", {d.dims.nx, d.dims.ny, d.dims.nz}},
              {"slab_depth", d.slab_depth},
              {"ghost_planes", d.ghost_planes},
              {"origin", {d.origin[0], d.origin[1], d.origin[2]}},
              {"spacing", {d.spacing[0], d.spacing[1], d.spacing[2]}},
              {"slabs", slabs}};
    return j.dump(2) + "\n";
}

void write_descriptor(const std::string& path, const Descriptor& d) {
    json_file::write_atomically(path, descriptor_to_json(d));
}

}  // namespace slabcast
