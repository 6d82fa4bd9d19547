#include "demo/plot.h"

#include "base/child_process.h"
#include "base/roles.h"

#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace slabcast {
namespace {
namespace fs = std::filesystem;

// Next to the binary in the build tree (server/), or in PREFIX/share/slabcast
// once installed.
std::string plot_script() {
    const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
    const fs::path candidates[] = {bin / "slabcast_plot.py", bin.parent_path() / "share/slabcast/slabcast_plot.py"};
    for (const fs::path& p : candidates)
        if (::access(p.c_str(), R_OK) == 0) return p.string();
    throw std::runtime_error("plot: the plotting script is missing (no " + candidates[0].string() + " or " +
                             candidates[1].string() + "): build slabcast again (cmake --build build)");
}

bool imports_matplotlib(const std::string& python) {
    ChildProcess probe = ChildProcess::start({python, "-c", "import matplotlib"}, "/dev/null");
    return probe.wait_for(60000) && WIFEXITED(probe.exit_status()) && WEXITSTATUS(probe.exit_status()) == 0;
}

// $SLABCAST_PYTHON, else the first python3 that has matplotlib: the one in
// PATH, else Debian's (python3-matplotlib is installed for /usr/bin/python3,
// which a python3 of pyenv or a virtual environment ahead of it in PATH lacks).
std::string plot_python() {
    if (const char* chosen = std::getenv("SLABCAST_PYTHON"); chosen && *chosen) return chosen;
    std::vector<std::string> pythons;
    for (const std::string& p : {find_in_path("python3"), std::string("/usr/bin/python3")})
        if (!p.empty() && ::access(p.c_str(), X_OK) == 0 && std::find(pythons.begin(), pythons.end(), p) == pythons.end())
            pythons.push_back(p);
    if (pythons.empty()) throw std::runtime_error("plot: python3 is missing: apt-get install python3 python3-matplotlib");
    for (const std::string& p : pythons)
        if (imports_matplotlib(p)) return p;
    throw std::runtime_error("plot: matplotlib is missing for " + pythons.front() +
                             ": apt-get install python3-matplotlib (or set SLABCAST_PYTHON to a python3 that has it)");
}

struct PlotOptions {
    std::vector<std::string> files;
    std::string out;
};

// Python takes this process's place: its messages, its exit code.
int run_plot(const PlotOptions& o) {
    const std::vector<std::string> command = plot_command(o.files, o.out);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    spdlog::default_logger()->flush();
    ::execv(argv[0], argv.data());
    throw std::runtime_error("plot: cannot run " + command[0] + ": " + std::strerror(errno));
}

}  // namespace

std::vector<std::string> plot_command(const std::vector<std::string>& files, const std::string& out) {
    std::vector<std::string> command{plot_python(), plot_script()};
    command.insert(command.end(), files.begin(), files.end());
    command.push_back("--out");
    command.push_back(out);
    return command;
}

void plot_demo_run(const std::string& out_dir, const std::vector<DemoSide>& sides) {
    const std::string logs = out_dir + "/logs";
    const std::string log = logs + "/plot.log";
    for (const DemoSide& s : sides) {
        const std::string& side = s.name;
        const std::string out = out_dir + "/plots/" + side + ".png";
        try {
            std::vector<std::string> files;  // the side's receiver, stager and shufflers, and the controller
            for (const auto& e : fs::directory_iterator(logs)) {
                const std::string name = e.path().filename().string();
                if (e.path().extension() == ".json" && (name.rfind(side + "-", 0) == 0 || name == "control.json"))
                    files.push_back(e.path().string());
            }
            std::sort(files.begin(), files.end());
            if (files.empty()) throw std::runtime_error("no --stats-json files of " + side + " in " + logs);
            fs::create_directories(out_dir + "/plots");
            ChildProcess plot = ChildProcess::start(plot_command(files, out), log);
            if (!plot.wait_for(120000)) throw std::runtime_error("it took over 120 s; see " + log);
            if (!WIFEXITED(plot.exit_status()) || WEXITSTATUS(plot.exit_status()) != 0)
                throw std::runtime_error("it failed; see " + log);
            spdlog::info("demo: {} figures in {}/plots/{}-*.png", side, out_dir, side);
        } catch (const std::exception& e) {
            spdlog::warn("demo: no {} figures: {}", side, e.what());
        }
    }
}

void register_plot(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<PlotOptions>();
    CLI::App* c = root.add_subcommand(
        "plot", "the figures of a run from the roles' --stats-json files: Gbit/s over time, loss per step, step "
                "latency, and the distribution of each step's sent->published (PNG, python3 + matplotlib)");
    c->add_option("files", o->files, "files the roles' --stats-json wrote (any roles; the controller's for latency)")
        ->required();
    c->add_option("--out", o->out, "report.png: writes report-throughput.png, report-loss.png, report-latency.png, "
                                   "report-transfer.png and report-series.json (the series plotted)")
        ->required();
    c->callback([o, &run] { run = [o] { return run_plot(*o); }; });
}

}  // namespace slabcast
