#include "demo/demo_dataset.h"

#include "base/child_process.h"
#include "base/stop_signal.h"

#include "slabcast/dataset.h"
#include "slabcast/memory_info.h"
#include "slabcast/units.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <vector>

namespace slabcast {
namespace {

namespace fs = std::filesystem;

// $SLABCAST_CACHE, else ~/.cache/slabcast, unless --cache says otherwise.
std::string cache_dir(const DemoOptions& o) {
    if (!o.cache.empty()) return o.cache;
    if (const char* cache = std::getenv("SLABCAST_CACHE")) return cache;
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "/tmp") + "/.cache/slabcast";
}

void generate(const DemoOptions& o, const Dims& dims, const std::string& datagen, const std::string& dir) {
    const int steps = demo_dataset_steps(o, dims);
    spdlog::info("demo: generating {} steps of a {} cosmology volume into {} (once; cached for next time)", steps,
                 to_string(dims), dir);
    ChildProcess gen = ChildProcess::start({datagen, "--out", dir, "--dims", o.dims, "--steps", std::to_string(steps)}, "");
    while (!gen.wait_for(200))
        if (stop_requested()) throw std::runtime_error("demo: stopped while generating the dataset");
    if (!WIFEXITED(gen.exit_status()) || WEXITSTATUS(gen.exit_status()) != 0)
        throw std::runtime_error("demo: the data generator failed");
}

// Checks the dataset against the demo's volume and fixes the colour range
// for the whole run from its last (most evolved) step, so that growth of
// structure shows as growth, not as a rescaled picture.
std::string colour_range(const Dataset& d, const std::string& dir, const Dims& dims) {
    if (!(d.dims == dims))
        throw std::runtime_error("demo: " + dir + " is " + to_string(d.dims) + ", not the --dims " + to_string(dims));
    std::ifstream in(d.step_path(d.steps.back()), std::ios::binary);
    std::vector<float> values(static_cast<std::size_t>(dims.plane()));
    float lo = std::numeric_limits<float>::max(), hi = 0;
    for (std::int64_t z = 0; z < dims.nz && in; ++z) {
        in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
        for (float v : values) {
            if (v > 0) lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!in || hi <= 0) throw std::runtime_error("demo: cannot read " + d.step_path(d.steps.back()));
    return fmt::format("{},{}", std::max(lo, hi * 1e-4f), hi);
}

}  // namespace

int demo_dataset_steps(const DemoOptions& o, const Dims& dims) {
    if (o.dataset_steps > 0) return o.dataset_steps;
    const std::int64_t step = dims.count() * 4;
    return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{8} << 30) / step, 4, 20));
}

DemoDataset prepare_demo_dataset(const DemoOptions& o, const Dims& dims, const std::string& datagen) {
    DemoDataset out;
    if (!o.dataset.empty()) {
        out.directory = o.dataset;
    } else {
        out.directory = fmt::format("{}/cosmo-{}-{}", cache_dir(o), to_string(dims), demo_dataset_steps(o, dims));
        if (fs::exists(out.directory + "/dataset.json")) spdlog::info("demo: dataset {} (cached)", out.directory);
        else generate(o, dims, datagen, out.directory);
    }
    const Dataset d = read_dataset(out.directory);
    out.range = colour_range(d, out.directory, dims);
    out.step_interval = o.step_interval >= 0                                    ? o.step_interval
                        : stays_in_page_cache(d.step_bytes() * d.steps.size()) ? 3
                                                                                : 0;
    if (o.step_interval < 0 && out.step_interval == 0)
        spdlog::info("demo: the dataset ({}) is read from disk each step: each step starts when the last is "
                     "through (--step-interval 0)", format_bytes(d.step_bytes() * d.steps.size()));
    return out;
}

}  // namespace slabcast
