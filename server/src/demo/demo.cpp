// `slabcast demo`: every role on this machine over loopback, plus ParaView
// rendering the stream live: the GUI when there is a display, otherwise pvbatch
// under its own Xvfb saving frames. `--head-to-head` adds the SC11 comparison
// (Balman et al., 2012, section 4, figure 6): 1/8 of the volume at the same
// resolution over a tenth of the bandwidth, rendered beside the full volume in
// one frame; `--compare-formats` the full volume once per data packet format
// (quad, run, run/quant:10, ...) at the same rate. The roles and their command
// lines come from the deployment
// planner (demo_plan.h, deploy_plan.h), as `slabcast plan` prints them.
#include "demo/demo_dataset.h"
#include "demo/demo_logs.h"
#include "demo/demo_options.h"
#include "demo/demo_plan.h"
#include "setup/install_layout.h"
#include "demo/plot.h"
#include "base/child_process.h"
#include "base/key_file.h"
#include "base/option_checks.h"
#include "base/roles.h"
#include "base/stop_signal.h"

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"
#include "slabcast/units.h"
#include "slabcast/volume.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

namespace slabcast {
namespace {
namespace fs = std::filesystem;

// "WxH", each 16..16384: the frame size goes to Xvfb and the renderer as is.
void check_frame_size(const std::string& text, const std::string& option) {
    int w = 0, h = 0;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%dx%d%c", &w, &h, &tail) != 2 || w < 16 || w > 16384 || h < 16 || h > 16384)
        throw std::invalid_argument(option + " '" + text + "': expected WxH, each 16 to 16384");
}

class Demo {
public:
    explicit Demo(const DemoOptions& o) : o_(o) {
        layout_ = find_install_layout(o.build_dir);
        dims_ = parse_dims(o.dims);
        if (o.head_to_head && o.streams < 8)
            throw std::invalid_argument("--head-to-head needs --streams 8 or more (the 1/8 side is streams/8 slabs)");
        if (!o.compare_formats.empty() && o.head_to_head)
            throw std::invalid_argument("--compare-formats and --head-to-head: one or the other");
        if (o.base_port + 300 * std::max(demo_full_volumes(o), 2) > 65535)
            throw std::invalid_argument("--base-port: the demo needs 300 ports a volume above it");
        if (dims_.nz % o.streams != 0)
            throw std::invalid_argument("--streams must divide NZ (" + std::to_string(dims_.nz) + ")");
        depth_ = static_cast<int>(dims_.nz / o.streams);
        size_ = o.wall.empty() ? o.size : o.wall;
        check_frame_size(size_, o.wall.empty() ? "--size" : "--wall");
        parse_rate_bps(o.rate);  // validates
    }

    int run() {
        check_requirements();
        const DemoDataset dataset = prepare_demo_dataset(o_, dims_, layout_.datagen);
        dataset_ = dataset.directory;
        o_.step_interval = dataset.step_interval;
        range_ = dataset.range;
        // A fresh run owns its output folder: old logs, frames and plots would mislead.
        for (const char* old : {"/logs", "/frames", "/plots"}) fs::remove_all(o_.out + old);
        fs::create_directories(o_.out + "/logs");
        // A fresh key for this run: the syncs are authenticated, as they should be anywhere.
        fs::remove(key_file());
        write_new_key(key_file());
        fs::create_directories(o_.out + "/frames");
        fs::remove(stop_file());
        plan_sides();
        int rc = 1;
        try {
            start_roles();
            wait_for_descriptors();
            start_controller();
            wait_for_first_step();
            if (!stop_requested()) start_renderer();
            rc = watch();
        } catch (...) {
            shutdown();  // stop whatever did start, and clean up, before reporting
            throw;
        }
        shutdown();
        return rc;
    }

private:
    // Named by the base port, so that two demos on one host do not collide.
    std::string shm_dir() const { return demo_shm_dir(o_); }
    std::string descriptor(const DemoSide& s) const { return descriptor_path(shm_dir(), s.name); }
    std::string log(const std::string& name) const { return o_.out + "/logs/" + name + ".log"; }
    std::string stats(const std::string& name) const { return o_.out + "/logs/" + name + ".json"; }  // --stats-json
    std::string stop_file() const { return o_.out + "/stop"; }
    std::string key_file() const { return o_.out + "/sync.key"; }
    std::string plugin_dir() const { return layout_.plugin_dir; }
    std::string script(const char* name) const { return layout_.script_dir + "/" + name; }
    bool gui() const { return !o_.headless && std::getenv("DISPLAY") && *std::getenv("DISPLAY"); }

    void check_requirements() {
        std::vector<std::string> missing;
        auto need_file = [&](const std::string& path, const std::string& what) {
            if (::access(path.c_str(), R_OK) != 0)
                missing.push_back(what + " (" + path + ", in the " + layout_.where +
                                  "): build it with `make build`, or install it");
        };
        auto need_program = [&](const std::string& program, const std::string& package) {
            if (find_in_path(program).empty()) missing.push_back(program + ": apt-get install " + package);
        };
        need_file(plugin_dir() + "/Slabcast.so", "the ParaView plugin");
        need_file(script("slabcast_render.py"), "the render program");
        if (o_.head_to_head || demo_full_volumes(o_) > 1)
            need_file(script("slabcast_head_to_head.py"), "the head-to-head program");
        if (o_.dataset.empty()) need_file(layout_.datagen, "the data generator");
        if (gui()) {
            need_program("paraview", "paraview");
            need_file(script("slabcast_gui_open.py"), "the GUI start-up script");
        } else {
            need_program("pvbatch", "paraview");
            need_program("Xvfb", "xvfb");
        }
        if (o_.ranks > 1) need_program("mpirun", "openmpi-bin");
        // Slabs and staged steps in /dev/shm, and the renderer, in memory: the
        // most of both that fits, or a refusal before anything starts.
        try {
            // pvbatch on its own Xvfb draws one volume on the CPU (slabcast_mappers.py's auto).
            memory_ = fit_demo_memory(o_, dims_, depth_, !gui() && demo_one_volume(o_));
        } catch (const std::runtime_error& e) {
            missing.push_back(std::string(e.what()).substr(std::string("demo: ").size()));
        }
        if (!missing.empty()) {
            std::string text = "demo: cannot start:";
            for (const auto& m : missing) text += "\n  - " + m;
            throw std::runtime_error(text);
        }
    }

    void plan_sides() {
        DemoPlan plan = plan_demo(o_, dims_, depth_, dataset_, key_file(), memory_);
        spdlog::info("demo: {} a step: {} buffers a slab, {} step(s) staged ahead{}, to fit this machine's memory",
                     format_bytes(static_cast<std::uint64_t>(dims_.count()) * 4), memory_.buffers, memory_.window,
                     memory_.max_points ? fmt::format(", rendered from at most {} points along its longest axis",
                                                      memory_.max_points)
                                      : "");
        deployment_ = std::move(plan.deployment);
        sides_ = std::move(plan.sides);
    }

    // Every role but the controller, as the planner has them, with what the
    // demo adds: figures in JSON for its own progress line and its plots,
    // shufflers that wait for their stager's copy, and a controller that
    // waits for them as long.
    void start_roles() {
        const std::string self = fs::read_symlink("/proc/self/exe").string();
        for (RoleCommand c : plan_roles(deployment_)) {
            c.argv[0] = self;
            std::string label = c.role == "control" ? "control" : c.volume + "-" + c.role;
            if (c.role == "shuffle") label += std::to_string(c.stream);
            c.argv.push_back("--stats-json");
            c.argv.push_back(stats(label));
            if (c.role == "receive" && o_.keep_shm) c.argv.push_back("--keep");
            if (c.role == "shuffle") {
                c.argv.push_back("--wait-staged-ms");
                c.argv.push_back(std::to_string(demo_staged_wait_ms(dims_)));
                ++streams_of_[c.volume];
            }
            if (c.role == "control") {
                c.argv.push_back("--done-timeout");
                c.argv.push_back(std::to_string(demo_done_timeout_s(dims_)));
                controller_argv_ = c.argv;
            }
            else children_.emplace_back(label, ChildProcess::start(c.argv, log(label)));
        }
    }

    // A receiver writes its descriptor once every slab is placed in memory:
    // a second or so per GiB (32 slabs of a 1024^3 volume take half a
    // minute), so it is waited for as long as it runs, up to 5 minutes.
    void wait_for_descriptors() {
        for (int i = 0; i < 15000 && !stop_requested(); ++i) {
            bool all = true;
            for (const DemoSide& s : sides_) all &= fs::exists(descriptor(s));
            if (all) return;
            if (i == 250) spdlog::info("demo: waiting for the receiver to place its slabs in {}", shm_dir());
            check_roles();
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        throw std::runtime_error("demo: the receiver did not start; see " + o_.out + "/logs/");
    }

    void start_renderer() {
        // A fixed mmap threshold: each new step's volume (8 MiB at 128^3 and up) is
        // then mapped and unmapped, not kept in the heap once glibc's adaptive
        // threshold grows, so a renderer that runs for days stays flat
        // (docs/performance.md, "Soak").
        std::vector<std::string> env = {"PV_PLUGIN_PATH=" + plugin_dir(), "MALLOC_MMAP_THRESHOLD_=1048576"};
        std::string labels;
        for (const DemoSide& s : sides_) labels += (labels.empty() ? "" : "|") + s.label;
        // A new step's first frame at 1/4 of the pixels (1/8 past 512^3: 0.03 s of a rank's core
        // at 1024^3, 1/4 0.1 s; docs/performance.md, "Scale"), refined (CPU path only), GUI or not.
        const std::string coarsest = dims_.count() > std::int64_t{512} * 512 * 512 ? "8" : "4";
        if (gui()) {
            env.push_back("SLABCAST_DESCRIPTOR=" + descriptor(sides_[0]));
            std::string others;  // the other volumes, each in a view of its own
            for (std::size_t i = 1; i < sides_.size(); ++i) others += (others.empty() ? "" : ":") + descriptor(sides_[i]);
            if (!others.empty()) env.push_back("SLABCAST_COMPARE=" + others);
            env.push_back("SLABCAST_LABELS=" + labels);
            env.push_back("SLABCAST_RANGE=" + range_);
            env.insert(env.end(), {"SLABCAST_SCRIPT_DIR=" + layout_.script_dir, "SLABCAST_COARSEST=" + coarsest});
            if (memory_.max_points) env.push_back(fmt::format("SLABCAST_MAX_POINTS={}", memory_.max_points));
            // --dr: start from default settings, not a user's saved layout.
            renderer_ = ChildProcess::start({"paraview", "--dr", "--script=" + script("slabcast_gui_open.py")},
                                            log("paraview"), env);
            spdlog::info("demo: ParaView is open on {}, showing the stream live; close it or press Ctrl-C to stop",
                         std::getenv("DISPLAY"));
            return;
        }
        // Our own X server: -noreset so MPI ranks connecting one after another
        // find it up; a screen as large as the frames.
        display_ = 90 + static_cast<int>(::getpid() % 100);
        while (fs::exists(fmt::format("/tmp/.X11-unix/X{}", display_))) ++display_;
        xvfb_ = ChildProcess::start({"Xvfb", fmt::format(":{}", display_), "-noreset", "-nolisten", "tcp", "-screen",
                                     "0", size_ + "x24"},
                                    log("xvfb"));
        for (int i = 0; i < 250 && !fs::exists(fmt::format("/tmp/.X11-unix/X{}", display_)); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        env.push_back(fmt::format("DISPLAY=:{}", display_));
        std::vector<std::string> argv;
        if (o_.ranks > 1) argv = {"mpirun", "--oversubscribe", "-np", std::to_string(o_.ranks), "-x", "DISPLAY", "-x",
                                  "PV_PLUGIN_PATH", "-x", "MALLOC_MMAP_THRESHOLD_"};
        if (o_.ranks > 1 && ::geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
        for (const char* a : {"pvbatch", "--force-offscreen-rendering"}) argv.push_back(a);
        if (sides_.size() > 1) {  // the volumes side by side in one frame
            argv.push_back(script("slabcast_head_to_head.py"));
            for (const DemoSide& s : sides_) argv.push_back(descriptor(s));
            argv.push_back("--labels");
            argv.push_back(labels);
        } else {
            argv.push_back(script("slabcast_render.py"));
            argv.push_back(descriptor(sides_[0]));
            argv.insert(argv.end(), {"--coarsest", coarsest});
            if (memory_.max_points) {  // a ceiling: the default path may render fewer (slabcast_mappers.py)
                argv.push_back("--max-points");
                argv.push_back(std::to_string(memory_.max_points));
            }
        }
        for (const std::string& a : {std::string("--save"), o_.out + "/frames/frame_%05d.png", std::string("--save-new-only"),
                                     std::string("--stop-file"), stop_file(), std::string("--size"), size_,
                                     std::string("--range"), range_, std::string(o_.show_holes ? "--show-holes" : "")})
            if (!a.empty()) argv.push_back(a);
        renderer_ = ChildProcess::start(argv, log("render"), env);
        spdlog::info("demo: rendering with pvbatch ({} rank(s)) on its own Xvfb :{}, frames into {}/frames",
                     o_.ranks, display_, o_.out);
    }

    // The renderer starts once every slab of every volume has its first step
    // (published, or dropped and reported), so that its first frame shows a
    // whole step, and so that its start-up (MPI, Python, the plugin: seconds
    // of both cores) does not take the CPU from the receivers mid-step: a
    // 1024^3 first step lost 2.1% when the renderer started on the first of
    // its 32 slabs.
    void wait_for_first_step() {
        const long limit_ms = demo_done_timeout_s(dims_) * 1000;
        for (long waited = 0; waited < limit_ms && !stop_requested(); waited += 50) {
            bool all = true;
            for (const DemoSide& s : sides_) all &= streams_reporting_a_step(stats(s.name + "-receive")) >= streams_of_[s.name];
            if (all) return;
            check_roles();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (stop_requested()) return;
        throw std::runtime_error(fmt::format("demo: the first step did not reach every slab within {} s; see {}/logs/",
                                             limit_ms / 1000, o_.out));
    }

    // A role that exits while the demo runs is a failure, named with its log.
    void check_roles() {
        for (auto& [label, child] : children_)
            if (!child.running())
                throw std::runtime_error("demo: " + label + " stopped unexpectedly; see " + log(label));
    }

    void start_controller() {
        controller_ = ChildProcess::start(controller_argv_, log("control"));
        spdlog::info("demo: streaming {} steps of {} from {}; Ctrl-C stops",
                     o_.forever ? std::string("endless") : std::to_string(o_.count), to_string(dims_), dataset_);
    }

    // Prints the figures once a second until the controller is done, ParaView
    // is closed, or Ctrl-C.
    int watch() {
        int rc = 0;
        while (!stop_requested()) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            print_progress();
            if (!controller_.running()) break;
            check_roles();
            if (!renderer_.running()) {
                if (!gui()) {
                    spdlog::error("demo: the renderer stopped; see {}", log("render"));
                    rc = 1;
                }
                break;
            }
        }
        if (gui() && !stop_requested() && renderer_.running()) {
            spdlog::info("demo: all steps sent; ParaView stays open until you close it (or Ctrl-C)");
            while (!stop_requested() && renderer_.running()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        } else if (!gui() && renderer_.running()) {
            // Let the last step reach the screen, then stop pvbatch cleanly.
            std::this_thread::sleep_for(std::chrono::seconds(3));
            std::ofstream(stop_file()).put('\n');
            if (!renderer_.wait_for(30000)) {
                spdlog::warn("demo: the renderer did not stop by itself; killing it");
            } else if (!WIFEXITED(renderer_.exit_status()) || WEXITSTATUS(renderer_.exit_status()) != 0) {
                spdlog::error("demo: the renderer failed (wait status {}); see {}", renderer_.exit_status(), log("render"));
                rc = 1;
            }
            fs::remove(stop_file());
        }
        return rc;
    }

    void print_progress() {
        std::string text;
        for (const DemoSide& s : sides_) {
            const std::string line = last_line(stats(s.name + "-receive"), "\"kind\":\"status\"");
            if (line.empty()) continue;
            const auto j = nlohmann::json::parse(line, nullptr, false);
            if (j.is_discarded()) continue;
            text += fmt::format("{}{}: step {} {:.2f} Gbit/s loss {:.3f}%", text.empty() ? "" : " | ", s.name,
                                j.value("step", -1), j.value("gbps", 0.0), j.value("loss_percent", 0.0));
        }
        const std::string frame = last_line(log("render"), "frame ");
        if (!frame.empty()) text += " | " + frame;
        if (!text.empty()) spdlog::info("demo: {}", text);
    }

    void shutdown() {
        renderer_.stop(10000);
        controller_.stop();
        for (auto& [label, child] : children_) child.stop();
        xvfb_.stop();
        for (const DemoSide& s : sides_) fs::remove_all(demo_staging(o_, s.name));
        if (!o_.keep_shm) fs::remove_all(shm_dir());
        int frames = 0;
        for (const auto& e : fs::directory_iterator(o_.out + "/frames")) frames += e.path().extension() == ".png";
        std::string video;
        if (frames > 1 && !find_in_path("ffmpeg").empty()) {
            video = o_.out + "/demo.mp4";
            ChildProcess ff = ChildProcess::start({"ffmpeg", "-y", "-loglevel", "error", "-framerate", "4", "-i",
                                                   o_.out + "/frames/frame_%05d.png", "-pix_fmt", "yuv420p", video},
                                                  log("ffmpeg"));
            if (!ff.wait_for(120000) || ff.exit_status() != 0) video.clear();
        }
        plot_demo_run(o_.out, sides_);
        for (const DemoSide& s : sides_) {
            const std::string line = last_line(log(s.name + "-receive"), "Gbit/s");
            if (!line.empty()) spdlog::info("demo: {} last status: {}", s.name, line.substr(line.find("receive:")));
        }
        spdlog::info("demo: done; {} frame(s) in {}/frames{}, logs in {}/logs", frames, o_.out,
                     video.empty() ? "" : ", video " + video, o_.out);
    }

    DemoOptions o_;  // a copy: run() settles the step interval
    InstallLayout layout_;  // where the plugin, the render programs and the generator are
    Dims dims_;
    int depth_ = 1;
    DemoMemory memory_;
    std::string size_;
    std::string dataset_;
    std::string range_;  // colour range LO,HI
    std::vector<DemoSide> sides_;
    Deployment deployment_;
    std::vector<std::string> controller_argv_;
    std::vector<std::pair<std::string, ChildProcess>> children_;  // roles, by log name
    std::map<std::string, std::size_t> streams_of_;  // shufflers a volume has
    ChildProcess controller_, renderer_, xvfb_;
    int display_ = 0;
};

}  // namespace

int run_demo(const DemoOptions& o) { return Demo(o).run(); }

}  // namespace slabcast
