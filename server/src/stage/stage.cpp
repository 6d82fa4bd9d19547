// `slabcast stage`: its options and status line; the work is the Stager's
// (stage/stager.h).
#include "base/roles.h"
#include "base/status_reporter.h"
#include "stage/stager.h"

#include "slabcast/memory_info.h"

#include <spdlog/spdlog.h>

#include <memory>

namespace slabcast {
namespace {

int run_stage(const StageOptions& o) {
    StatusReporter status("stage", o.stats_json);
    Stager stager(o, status);
    StageCounters& c = stager.counters();
    std::uint64_t last_bytes = 0;
    std::int64_t last_ns = 0;
    status.start([&] {
        const std::uint64_t bytes = c.bytes_read.load();
        const std::int64_t ns = c.read_ns.load();
        // Read rate while reading, not diluted by idle time waiting for the shufflers.
        const double rate = ns > last_ns ? static_cast<double>(bytes - last_bytes) / static_cast<double>(ns - last_ns) : 0;
        last_bytes = bytes;
        last_ns = ns;
        return nlohmann::json{
            {"line", fmt::format("stage: read {:.2f} GB/s, {} staged now, {} staged ({} still in their slots), {} freed, "
                                 "{} skipped, next step {}",
                                 rate, c.staged.load(), c.steps_staged.load(), c.steps_reused.load(),
                                 c.steps_freed.load(), c.steps_skipped.load(), c.cursor_step.load())},
            {"read_gbytes_per_s", rate}, {"staged_now", c.staged.load()}, {"steps_staged", c.steps_staged.load()},
            {"steps_reused", c.steps_reused.load()},
            {"steps_freed", c.steps_freed.load()}, {"steps_skipped", c.steps_skipped.load()}};
    });
    stager.run();
    status.stop();
    return 0;
}

}  // namespace

void register_stage(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<StageOptions>();
    CLI::App* c = root.add_subcommand("stage", "copy the next steps into the staging area ahead of the shufflers");
    c->add_option("--dataset", o->dataset, "dataset directory or its dataset.json")->required();
    c->add_option("--from", o->from,
                  "HOST[:PORT] of a `slabcast serve --allow-pull` on the data host: pull the steps from it "
                  "(--dataset is then a path beneath its --root)");
    c->add_option("--pull-streams", o->pull_streams, "TCP streams per pulled step (with --from)")
        ->check(CLI::Range(1, 128))
        ->capture_default_str();
    c->add_option("--staging", o->staging, "staging directory, e.g. /dev/shm/slabcast-staging")->required();
    c->add_option("--streams", o->streams, "streams whose shufflers use this staging area, e.g. 0-31")->required();
    c->add_option("--budget", o->budget, "memory for staged steps, e.g. 16G (default: half the free space)");
    c->add_option("--sync", o->sync, "HOST:PORT to hear the controller's sync packets on");
    c->add_option("--key-file", o->key_file,
                  "accept only syncs authenticated with this key (slabcast keygen); with --from, the streams to "
                  "the data host's serve are authenticated with it too");
    c->add_option("--controller", o->controller, "accept syncs only from these addresses/CIDRs");
    c->add_flag("--loop", o->loop, "the controller loops over the steps: keep staging from the start");
    c->add_option("--stats-json", o->stats_json, "append JSON lines (status every second, step reports)");
    c->callback([o, &run] { run = [o] { return run_stage(*o); }; });
}

}  // namespace slabcast
