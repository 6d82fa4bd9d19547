// slabcast-test-writer: writes slabcast volumes straight into slab files with
// known values, and damages them on purpose, so the reader tests can cover
// corner cases (missing, truncated, corrupt, wrong-version slabs) without a
// network. Values:
//   index: v = (x + NX*(y + NY*z)) + 1 + 0.5*step, exact in float32 for the
//          test sizes, so values read back through ParaView compare exactly;
//   blobs: a density-like field (Gaussian clumps on a 0.1 floor) for rendering;
//   constant: v = step everywhere (a read that mixes steps shows two values).
// Each write is one step, written into a buffer the publication protocol
// hands out (slabcast/publication.h) and published whole, as the receiver
// does; --unpublished leaves it being written (the reader's Newest data).
#include "slabcast/descriptor.h"
#include "slabcast/publication.h"
#include "slabcast/slab_file.h"
#include "slabcast/volume.h"

#include <CLI/CLI.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

using namespace slabcast;

namespace {

std::set<int> parse_list(const std::string& text, int count) {
    std::set<int> out;
    if (text.empty() || text == "all") {
        for (int k = 0; k < count; ++k) out.insert(k);
        return out;
    }
    if (text == "none") return out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) out.insert(std::stoi(item));
    return out;
}

float value(const std::string& pattern, const Dims& d, std::int64_t x, std::int64_t y, std::int64_t z, int step) {
    if (pattern == "constant") return static_cast<float>(step);
    if (pattern == "index") return static_cast<float>(volume_offset(d, x, y, z) + 1 + 0.5 * step);
    // Eight clumps at fixed fractions of the box, drifting with the step.
    static const double c[8][4] = {{.3, .3, .3, 6}, {.7, .4, .6, 3}, {.5, .7, .2, 4}, {.2, .8, .8, 2},
                                   {.8, .2, .8, 5}, {.5, .5, .5, 8}, {.35, .6, .7, 2.5}, {.65, .75, .4, 3.5}};
    double v = 0.1;
    for (const auto& b : c) {
        const double dx = x - (b[0] + 0.01 * step) * d.nx, dy = y - b[1] * d.ny, dz = z - b[2] * d.nz;
        const double r = 0.08 * d.nx;
        v += b[3] * std::exp(-(dx * dx + dy * dy + dz * dz) / (r * r));
    }
    return static_cast<float>(v);
}

struct WriteOptions {
    int buffers = kDefaultBuffers;
    bool unpublished = false;
    int repaired = 0;  // datagrams FEC rebuilt in the step, as a receiver would publish (slab k: k x this)
};

int write_volume(const std::string& dir, const std::string& name, const std::string& dims_text, int depth,
                 const std::string& slabs_text, const std::string& list_text, const std::string& pattern, int step,
                 const std::string& field, const WriteOptions& o) {
    const Dims dims = parse_dims(dims_text);
    const int count = slab_count(dims, depth);
    const std::set<int> write = parse_list(slabs_text, count);
    const std::set<int> listed = list_text.empty() ? write : parse_list(list_text, count);
    ::mkdir(dir.c_str(), 0750);
    Descriptor desc;
    desc.name = name;
    desc.field = field;
    desc.dims = dims;
    desc.slab_depth = depth;
    desc.ghost_planes = 1;
    for (int k : write) {
        const SlabGeometry g = slab_geometry(dims, depth, k, 1);
        SlabMapping m = SlabMapping::create(slab_file_path(dir, name, k), dims, depth, g, field, o.buffers);
        SlabLive& live = m.header_rw().live;
        std::string why;
        const int b = take_buffer(m, &why);
        if (b < 0) throw std::runtime_error(m.path() + ": " + why);
        live.step.store(step);
        live.generation.fetch_add(1);
        float* v = m.values_rw(b);
        for (std::int64_t z = g.stored_z_begin; z < g.z_end; ++z)
            for (std::int64_t y = 0; y < dims.ny; ++y)
                for (std::int64_t x = 0; x < dims.nx; ++x) v[slab_offset(dims, g, x, y, z)] = value(pattern, dims, x, y, z, step);
        std::memset(m.ages_rw(b), 0, m.value_count());  // every value arrived
        live.step_records.store(live.step_expected.load());
        if (o.unpublished) continue;  // left being written
        PublishInfo info{step, live.step_expected.load(), live.step_expected.load(), 0, true};
        info.repaired = static_cast<std::uint64_t>(o.repaired) * static_cast<std::uint64_t>(k);
        live.fec_repaired.fetch_add(info.repaired);
        live.fec_unrepaired.store(static_cast<std::uint64_t>(k));
        publish_buffer(m, b, info);
        live.last_step_records.store(live.step_expected.load());
        live.last_step_loss_ppm.store(0);
        live.last_step_complete.store(1);
        live.last_step.store(step);
        live.generation.fetch_add(1);
    }
    for (int k : listed) desc.slabs.push_back(SlabEntry{k, slab_file_name(name, k)});
    write_descriptor(dir + "/" + name + ".slabcast", desc);
    std::printf("%s/%s.slabcast\n", dir.c_str(), name.c_str());
    return 0;
}

void patch(const std::string& path, std::size_t offset, const void* bytes, std::size_t n) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    if (!f) throw std::runtime_error(path + ": cannot open for patching");
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
}

int corrupt(const std::string& path, const std::string& how) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": no such file");
    if (how == "truncate") {  // header intact, values cut short
        if (::truncate(path.c_str(), st.st_size / 2) != 0) throw std::runtime_error(path + ": truncate failed");
    } else if (how == "tiny") {  // not even a header
        if (::truncate(path.c_str(), 100) != 0) throw std::runtime_error(path + ": truncate failed");
    } else if (how == "magic") {
        patch(path, offsetof(SlabHeader, magic), "GARBAGE!", 8);
    } else if (how == "version") {
        const std::uint32_t v = kSlabVersion + 1;
        patch(path, offsetof(SlabHeader, version), &v, sizeof v);
    } else if (how == "header") {  // plane range beyond the volume
        const std::int32_t z_end = 1 << 20;
        patch(path, offsetof(SlabHeader, z_end), &z_end, sizeof z_end);
    } else {
        throw std::runtime_error("unknown --how '" + how + "'");
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"slabcast-test-writer: slab files with known values, and damaged ones"};
    app.require_subcommand(1);
    std::string dir, name = "test", dims = "16,16,16", slabs, list, pattern = "index", field = "density";
    int depth = 8, step = 0;
    auto* w = app.add_subcommand("write", "write (or rewrite) slabs and the descriptor");
    w->add_option("--dir", dir)->required();
    w->add_option("--name", name)->capture_default_str();
    w->add_option("--dims", dims)->capture_default_str();
    w->add_option("--slab-depth", depth)->capture_default_str();
    w->add_option("--slabs", slabs, "slab files to write: all, none or 0,2,...");
    w->add_option("--list", list, "slabs the descriptor lists (default: those written)");
    w->add_option("--pattern", pattern, "index, blobs or constant")->capture_default_str();
    w->add_option("--step", step)->capture_default_str();
    w->add_option("--field", field)->capture_default_str();
    WriteOptions wo;
    w->add_option("--buffers", wo.buffers, "value buffers per slab (a slab with another count is replaced)")
        ->capture_default_str();
    w->add_flag("--unpublished", wo.unpublished, "write the step but leave it unpublished, as while it arrives");
    w->add_option("--repaired", wo.repaired,
                  "FEC: slab k's step had k x this many datagrams rebuilt, and k lost beyond repair");
    std::string file, how;
    auto* c = app.add_subcommand("corrupt", "damage one slab file");
    c->add_option("--file", file)->required();
    c->add_option("--how", how, "truncate, tiny, magic, version or header")->required();
    CLI11_PARSE(app, argc, argv);
    try {
        if (w->parsed()) return write_volume(dir, name, dims, depth, slabs, list, pattern, step, field, wo);
        return corrupt(file, how);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "slabcast-test-writer: %s\n", e.what());
        return 1;
    }
}
