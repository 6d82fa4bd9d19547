// The options of `slabcast demo` (register_demo in demo.cpp lists them with
// their help), shared by the demo's parts.
#pragma once

#include <string>

namespace slabcast {

struct DemoOptions {
    std::string dims = "256,256,256";
    int dataset_steps = 0;  // 0: demo_dataset_steps()
    long count = 20;
    bool forever = false;
    int streams = 4;
    std::string rate = "1G";
    bool head_to_head = false;
    // "quad,run,run/quant:10": the full volume once per data packet format, all at
    // --rate, side by side (docs/wire-format.md).
    std::string compare_formats;
    // As over a lossy WAN: the progressive order, unless --order names
    // another; the fill is nearest for the progressive order and previous
    // for the others, unless --fill names one (empty: the default).
    bool wan = false;
    std::string order, fill;
    std::string size = "1280x720";
    std::string wall;
    std::string out = "demo-output";
    std::string cache;
    std::string dataset;
    int ranks = 1;
    // Like SC11 (1.4 s to move a step, 2.5 s to render it; Balman et al., 2012,
    // section 4.6): time to see each step. Below 0: chosen by the demo
    // (demo_step_interval).
    double step_interval = -1;
    bool headless = false;
    bool keep_shm = false;
    bool show_holes = false;  // colour values lost in their step (filled from an earlier one)
    int base_port = 47000;
    std::string build_dir;  // where the plugin, render script and datagen are
};

// Runs the demo (demo.cpp); its exit status.
int run_demo(const DemoOptions& o);

}  // namespace slabcast
