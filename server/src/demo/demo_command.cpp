// `slabcast demo`'s command line: its options, with their help and checks
// (the demo itself: demo.cpp).
#include "demo/demo_options.h"
#include "base/option_checks.h"
#include "base/roles.h"

#include "slabcast/send_order.h"

#include <memory>

namespace slabcast {

void register_demo(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<DemoOptions>();
    CLI::App* c = root.add_subcommand("demo", "the live demo: every role on this machine and ParaView rendering");
    c->add_option("--dims", o->dims, "volume size of the generated dataset")->capture_default_str();
    c->add_option("--dataset-steps", o->dataset_steps,
                  "steps in the generated dataset (default: 20, fewer where that passes 8 GiB, at least 4)")
        ->check(CLI::Range(1, 100000));
    c->add_option("--dataset", o->dataset, "use this dataset instead of generating one");
    c->add_option("--cache", o->cache, "where generated datasets are kept (default ~/.cache/slabcast)");
    c->add_option("--count", o->count, "steps to stream before finishing")
        ->check(CLI::Range(1L, 1000000000L))
        ->capture_default_str();
    c->add_flag("--forever", o->forever, "stream until Ctrl-C (the booth)");
    c->add_option("--streams", o->streams, "streams (z-slabs) of the full volume")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    c->add_option("--rate", o->rate, "rate of each full-volume stream")->capture_default_str();
    c->add_flag("--head-to-head", o->head_to_head,
                "also stream 1/8 of the volume over 1/10 of the bandwidth and show both side by side");
    c->add_option("--compare-formats", o->compare_formats,
                  "the full volume once per data packet format at the same --rate, side by side, each labelled "
                  "with what it delivers, e.g. quad,run,run/quant:10 or run,run@progressive (2 to 4 of quad, run, "
                  "run/CODEC, each with @ORDER for a send order of its own)");
    c->add_flag("--wan", o->wan,
                "stream as over a lossy WAN: the progressive order (coarse first, filled nearest), so that a step "
                "cut short (--rate too low for --step-interval) still shows the whole volume, coarsely");
    c->add_option("--order", o->order, "send order: scan (default), morton or progressive (default with --wan)")
        ->check(parsed_by(parse_send_order, "ORDER"));
    c->add_option("--fill", o->fill,
                  "the receivers' fill rule: previous or nearest (default: nearest for the progressive order)")
        ->check(parsed_by(parse_fill_rule, "RULE"));
    c->add_option("--step-interval", o->step_interval,
                  "seconds per step; 0 = each step as soon as every shuffler has sent it (default: 3, or 0 where "
                  "the dataset is too large to stay in memory and each step is read from disk)")
        ->check(seconds_range(0, 3600));
    c->add_option("--size", o->size, "frame size WxH")->capture_default_str();
    c->add_option("--wall", o->wall, "wall-display frame size, e.g. 3840x2160");
    c->add_option("--ranks", o->ranks, "pvbatch MPI ranks (sort-last compositing)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    c->add_flag("--headless", o->headless, "pvbatch under a private Xvfb even when a display is there");
    c->add_option("--out", o->out, "folder for frames, video and logs")->capture_default_str();
    c->add_flag("--keep-shm", o->keep_shm, "leave the slabs in /dev/shm at the end");
    c->add_flag("--show-holes", o->show_holes, "colour the values a step lost (shown from an earlier step)");
    // It uses 300 ports a volume from base (data, syncs and stagers of each side).
    c->add_option("--base-port", o->base_port, "first of the UDP ports used on 127.0.0.1")
        ->check(CLI::Range(1, 64900))
        ->capture_default_str();
    c->add_option("--build-dir", o->build_dir,
                  "build tree with the plugin (default: this binary's build tree, or else its install prefix)");
    c->callback([o, &run] { run = [o] { return run_demo(*o); }; });
}

}  // namespace slabcast
