// `slabcast plan`: one JSON file describes a whole deployment (hosts, streams,
// ports, rates); plan prints the command each host runs, in start order
// (receivers, then senders, then the controller), and then the render
// launch across the receivers (render_launch.h). See docs/deployment.md.
#include "setup/deploy_plan.h"
#include "setup/install_layout.h"
#include "setup/memory_plan.h"
#include "setup/render_launch.h"
#include "base/roles.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace slabcast {
namespace {

struct PlanOptions {
    std::string config;
    std::string host;
};

int run_plan(const PlanOptions& o) {
    std::ifstream in(o.config);
    if (!in) throw std::runtime_error(o.config + ": cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    const Deployment d = read_deployment(text.str(), o.config);
    const std::string commands = plan_commands(d, o.config, o.host);
    // On the host it plans (or all on loopback here), a plan that cannot fit
    // is refused now, not when the last role fills /dev/shm.
    const std::string problem = plan_memory_problem(d, o.host);
    if (!problem.empty()) throw std::runtime_error(o.config + ": " + problem);
    std::cout << commands;
    // One launch for the whole cluster, not a host's own command: the full plan only.
    if (o.host.empty())
        for (const PlanVolume& v : d.volumes) std::cout << render_launch(v, find_install_layout(""));
    return 0;
}

}  // namespace

void register_plan(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* c = root.add_subcommand("plan", "print each host's commands for a deployment described in one JSON file");
    c->add_option("config", o->config, "deployment file (docs/deployment.md)")->required();
    c->add_option("--host", o->host,
                  "print only this host's commands (without it, the plan ends with the mpirun line that "
                  "renders across the receivers: a pvbatch rank a slab, each on its slab's host)");
    c->callback([o, &run] { run = [o] { return run_plan(*o); }; });
}

}  // namespace slabcast
