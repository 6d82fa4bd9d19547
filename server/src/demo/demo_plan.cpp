#include "demo/demo_plan.h"

#include "setup/memory_plan.h"

#include "slabcast/in_place_hold.h"
#include "slabcast/run_codec.h"
#include "slabcast/send_order.h"
#include "slabcast/slab_file.h"
#include "slabcast/stitched_planes.h"
#include "slabcast/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace slabcast {
namespace {

// `step_bytes`: a step of the dataset, which every side's stager copies whole.
void add_side(DemoPlan& plan, const DemoOptions& o, const DemoMemory& memory, const DemoSide& side, const Dims& dims,
              int depth, int streams, const std::string& rate, std::int64_t step_bytes,
              const DemoFormat& format = {"run", "run", "none", ""}) {
    const int base = o.base_port + 300 * static_cast<int>(plan.sides.size());
    PlanVolume v;
    v.name = side.name;
    v.dims = dims;
    v.slab_depth = depth;
    v.rate = rate;
    v.wire = format.wire;
    v.codec = format.codec;
    v.order = !format.order.empty() ? format.order : !o.order.empty() ? o.order : o.wan ? "progressive" : "scan";
    v.fill = !o.fill.empty() ? o.fill : v.order == "progressive" ? "nearest" : "previous";
    v.ports = PortLayout{base, base + 100, base + 200};
    PlanHost host;
    host.name = "localhost";
    host.address = "127.0.0.1";
    host.streams_text = fmt::format("0-{}", streams - 1);
    for (int k = 0; k < streams; ++k) host.streams.push_back(k);
    PlanHost receiver = host;
    receiver.shm_dir = demo_shm_dir(o);
    receiver.buffers = memory.buffers == kDefaultBuffers ? 0 : memory.buffers;
    v.receivers.push_back(receiver);
    PlanHost sender = host;
    sender.staging = demo_staging(o, side.name);
    // Each stager reads up to `window` steps of the dataset ahead.
    sender.budget = std::to_string(memory.window * step_bytes / 1048576 + 1) + "M";
    v.senders.push_back(sender);
    plan.deployment.volumes.push_back(v);
    plan.sides.push_back(side);
}

}  // namespace

std::vector<DemoFormat> parse_demo_formats(const std::string& list) {
    std::vector<DemoFormat> out;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string text = list.substr(at, comma - at);
        const std::size_t order_at = std::min(text.find('@'), text.size());
        const std::string format = text.substr(0, order_at);
        const std::size_t slash = format.find('/');
        DemoFormat f{text, format.substr(0, slash), slash == std::string::npos ? "none" : format.substr(slash + 1),
                     order_at < text.size() ? text.substr(order_at + 1) : ""};
        try {
            if (!f.order.empty()) parse_send_order(f.order);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("--compare-formats: '" + text + "': " + e.what());
        }
        if (f.wire != "quad" && f.wire != "run")
            throw std::invalid_argument("--compare-formats: '" + text + "': expected quad, run or run/CODEC[@ORDER]");
        if (run::parse_codec(f.codec).codec != run::Codec::None && f.wire != "run")
            throw std::invalid_argument("--compare-formats: '" + text + "': a codec needs run packets (run/CODEC)");
        out.push_back(f);
        at = comma + 1;
    }
    if (out.size() < 2 || out.size() > 4)
        throw std::invalid_argument("--compare-formats: 2 to 4 formats, e.g. quad,run,run/quant:10");
    return out;
}

std::string demo_shm_dir(const DemoOptions& o) { return fmt::format("/dev/shm/slabcast-demo-{}", o.base_port); }

std::string demo_staging(const DemoOptions& o, const std::string& side) { return demo_shm_dir(o) + "-staging-" + side; }

DemoPlan plan_demo(const DemoOptions& o, const Dims& dims, int depth, const std::string& dataset,
                   const std::string& key_file, const DemoMemory& memory) {
    DemoPlan plan;
    Deployment& d = plan.deployment;
    d.dataset = dataset;
    d.key_file = key_file;
    d.controller.host = "localhost";
    d.controller.address = "127.0.0.1";
    d.controller.loop = true;
    d.controller.interval = o.step_interval;
    if (!o.forever) d.controller.count = o.count;
    const double rate = parse_rate_bps(o.rate);
    const std::int64_t step_bytes = dims.count() * 4;
    if (!o.compare_formats.empty()) {
        // The same volume, streams and rate, once per format: what each
        // delivers of a step in the time it has is the comparison.
        for (const DemoFormat& f : parse_demo_formats(o.compare_formats)) {
            std::string name = f.text;
            for (char& c : name)
                if (c == '/' || c == ':' || c == '@') c = '-';
            add_side(plan, o, memory, {name, fmt::format("{}: {} streams x {}", f.text, o.streams, format_rate(rate))}, dims,
                     depth, o.streams, o.rate, step_bytes, f);
        }
        return plan;
    }
    add_side(plan, o, memory, {"full", fmt::format("{} streams x {}: full volume", o.streams, format_rate(rate))}, dims, depth,
             o.streams, o.rate, step_bytes);
    if (o.head_to_head) {
        // The paper's split: the full volume gets 90% of the bandwidth, 1/8 of
        // it (the first eighth of the slabs, same resolution) the other 10%.
        const int eighth = o.streams / 8;
        const double eighth_rate = rate * o.streams / 9.0 / eighth;
        add_side(plan, o, memory, {"eighth", fmt::format("{} stream(s) x {}: 1/8 volume", eighth, format_rate(eighth_rate))},
                 Dims{dims.nx, dims.ny, static_cast<std::int64_t>(depth) * eighth}, depth, eighth,
                 fmt::format("{:.0f}", eighth_rate), step_bytes);
    }
    return plan;
}

long demo_staged_wait_ms(const Dims& dims) {
    const auto step_gib = static_cast<double>(dims.count()) * 4 / (1 << 30);
    return 10000 + static_cast<long>(15000 * step_gib);
}

long demo_done_timeout_s(const Dims& dims) { return demo_staged_wait_ms(dims) / 1000 + 30; }

int demo_full_volumes(const DemoOptions& o) {
    return o.compare_formats.empty() ? 1 : static_cast<int>(parse_demo_formats(o.compare_formats).size());
}

bool demo_one_volume(const DemoOptions& o) { return !o.head_to_head && o.compare_formats.empty(); }

std::uint64_t demo_renderer_bytes(const DemoOptions& o, const Dims& dims, int max_points, bool cpu, int buffers) {
    constexpr std::uint64_t kRankBase = 512ull << 20;  // pvbatch with the plugin, Python and Mesa loaded
    if (cpu) {
        // The plugin's CPU ray marcher draws the values where the reader
        // put them: no texture. A rank spanning several slabs maps their
        // planes back to back where a plane is whole pages and its slabs'
        // buffers let a frame hold its step (the reader's rule:
        // CanHoldAcrossFrames); else it gets the reader's copy of its piece.
        double copied = 0;
        if (o.ranks != o.streams) {
            const bool held = buffers >= kBuffersToHoldInPlace;
            const double count = static_cast<double>(dims.count());
            const bool values = held && StitchedPlanes::possible(StitchedPlanes::Kind::Values, dims);
            copied += values ? 0 : 4 * count;
            copied += values && StitchedPlanes::possible(StitchedPlanes::Kind::Ages, dims) ? 0 : count;
        }
        return kRankBase * static_cast<std::uint64_t>(o.ranks) + static_cast<std::uint64_t>(copied);
    }
    const double volumes = o.head_to_head ? 1.125 : demo_full_volumes(o);  // the other side is 1/8
    // Measured (sc11_scale.py, the default mapper on llvmpipe): a rank whose
    // piece spans several slabs gets a copy of it from the reader (one rank
    // per slab maps its slab without one); the volume representation then
    // holds 1.5 times what it renders (the mapper's texture and what it is
    // made from): 2 ranks over 32 slabs of 1024^3 held 5.2 GiB each. At a
    // stride the reader copies only the points rendered.
    const double longest = static_cast<double>(std::max({dims.nx, dims.ny, dims.nz}));
    const double rendered = static_cast<double>(dims.count()) * 4 * volumes *
                            (max_points > 0 ? std::min(1.0, std::pow(max_points / longest, 3)) : 1.0);
    const double copied = o.ranks == o.streams && max_points == 0 ? 0 : rendered;
    return kRankBase * static_cast<std::uint64_t>(o.ranks) + static_cast<std::uint64_t>(copied + 1.5 * rendered);
}

DemoMemory fit_demo_memory(const DemoOptions& o, const Dims& dims, int depth, bool cpu) {
    const MachineRoom room = room_here(demo_shm_dir(o));
    // Drawn in place (cpu), a frame holds its step's buffers until the next:
    // with 2 a slab the receiver would drop the steps that come meanwhile,
    // so a third buffer comes before a second staged step.
    const std::vector<DemoMemory> kept = cpu ? std::vector<DemoMemory>{{3, 3}, {3, 2}, {3, 1}, {2, 2}, {2, 1}}
                                             : std::vector<DemoMemory>{{3, 3}, {3, 2}, {2, 2}, {3, 1}, {2, 1}};
    std::vector<DemoMemory> candidates = kept;
    const bool one_volume = demo_one_volume(o);
    for (const int n : {512, 256})
        if (one_volume && !cpu && n < std::max({dims.nx, dims.ny, dims.nz}))
            for (const DemoMemory& m : kept) candidates.push_back({m.buffers, m.window, n});
    std::string problem;
    for (const DemoMemory& m : candidates) {
        const DemoPlan plan = plan_demo(o, dims, depth, "", "", m);
        problem = memory_problem(plan_memory(plan.deployment),
                                 demo_renderer_bytes(o, dims, m.max_points, cpu, m.buffers),
                                 fmt::format("the renderer's {} rank(s)", o.ranks), room);
        if (problem.empty()) return m;
    }
    throw std::runtime_error(fmt::format("demo: {} does not fit this machine even with 2 buffers a slab, one step "
                                         "staged{}: {} (a smaller --dims, fewer --ranks, or a larger /dev/shm: "
                                         "mount -o remount,size=N /dev/shm)",
                                         to_string(dims),
                                         one_volume && !cpu ? " and the renderer on at most 256 points a side" : "",
                                         problem));
}

}  // namespace slabcast
