// What `slabcast demo` runs, as a deployment of the planner (deploy_plan.h):
// every role on 127.0.0.1, the full volume and, with --head-to-head, the SC11
// comparison beside it: 1/8 of the volume at the same resolution over a tenth
// of the bandwidth (Balman et al., 2012, sections 4 and 4.2, figure 6); or,
// with --compare-formats, the full volume once per data packet format, each
// at the same rate.
#pragma once

#include "demo/demo_options.h"
#include "setup/deploy_plan.h"
#include "slabcast/slab_file.h"

#include <cstdint>
#include <string>
#include <vector>

namespace slabcast {

// One volume of the demo, as its frame labels it.
struct DemoSide {
    std::string name;   // also the volume's name: NAME.slabcast
    std::string label;  // "4 streams x 1.00 Gbit/s: full volume"
};

struct DemoPlan {
    Deployment deployment;
    std::vector<DemoSide> sides;
};

// --compare-formats' list, each FORMAT as `quad`, `run` or `run/CODEC`, then
// `@ORDER` for a send order other than the demo's (checked:
// std::invalid_argument names a bad one); 2 to 4 of them.
struct DemoFormat {
    std::string text, wire, codec, order;  // order empty: the demo's
};
std::vector<DemoFormat> parse_demo_formats(const std::string& list);

// Named by the base port, so that two demos on one host do not collide.
std::string demo_shm_dir(const DemoOptions& o);
std::string demo_staging(const DemoOptions& o, const std::string& side);

// How much of a step the demo keeps: value buffers per slab (receive
// --buffers) and steps each stager reads ahead (its --budget).
struct DemoMemory {
    int buffers = 3, window = 3;
    // 0: the renderer may show the volume at full resolution; N: at most N
    // points along its longest axis (slabcast_render.py --max-points N: every
    // K-th point, which the reader takes from the slabs without a full-size
    // copy), when the full one does not fit beside the slabs.
    int max_points = 0;
};

// `depth` planes per slab (NZ / --streams); `dataset` and `key_file` as the
// demo has them ready. Each side's ports start at --base-port + 300 i (data,
// sync + 100, stager + 200); syncs are authenticated and taken from the
// controller only, as anywhere else.
DemoPlan plan_demo(const DemoOptions& o, const Dims& dims, int depth, const std::string& dataset,
                   const std::string& key_file, const DemoMemory& memory = {});

// How long a shuffler waits for its stager's copy of a step (its
// --wait-staged-ms): 10 s, plus 15 s a GiB of step, for a 1024^3 step read
// from a disk at a few hundred MB/s while the slabs crowd out the page cache.
long demo_staged_wait_ms(const Dims& dims);
// How long the controller waits for the shufflers to finish a step (its
// --done-timeout, seconds): their staged wait and 30 s to send it. A
// controller that gave up sooner (its default 30 s) moved on while a 1024^3
// step was still being read from a slow disk, and the shufflers skipped it.
long demo_done_timeout_s(const Dims& dims);

// Full volumes the demo streams: one a format with --compare-formats, else 1
// (--head-to-head adds a 1/8 one).
int demo_full_volumes(const DemoOptions& o);
// Whether the demo shows one volume (no --head-to-head, no --compare-formats).
bool demo_one_volume(const DemoOptions& o);

// What the demo's renderer (pvbatch ranks, or the GUI) holds beside the
// slabs it maps: per rank a base; with ParaView's GPU ray caster the
// reader's copy of a rank's piece where it spans several slabs or is strided
// (`max_points` along the longest axis, 0: all) and 1.5 times the values
// rendered (docs/performance.md, "Scale"); with the plugin's CPU ray
// marcher (`cpu`: pvbatch on the demo's own Xvfb, one volume) only the
// reader's copy of a rank's piece that spans several slabs where it cannot
// map their planes in place (`buffers` a slab; section 16).
std::uint64_t demo_renderer_bytes(const DemoOptions& o, const Dims& dims, int max_points = 0, bool cpu = false,
                                  int buffers = kDefaultBuffers);

// The most buffers and read-ahead that fit this machine's memory and /dev/shm
// beside the renderer, from (3 buffers, 3 steps) down to (2, 1) (drawn in
// place, 3 buffers with 1 step before 2 with 2); failing
// those, with the GPU path, the same with the renderer on at most 512, then
// 256, points along the longest axis (one volume only: the side-by-side views
// have no level of detail; the CPU path draws every voxel in place). Throws
// std::runtime_error naming the figures when nothing fits.
DemoMemory fit_demo_memory(const DemoOptions& o, const Dims& dims, int depth, bool cpu = false);

}  // namespace slabcast
