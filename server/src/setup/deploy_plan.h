// A deployment -> the command each host runs, in start order: receivers,
// senders (stager, then shufflers), controller (Balman et al., 2012, section
// 4.1, figure 3: sender hosts, receive/render hosts and a controller). `slabcast plan`
// reads one from a JSON file (docs/deployment.md) and prints the commands;
// `slabcast demo` builds one for this machine and runs them. Every option
// the roles are started with is written here only.
#pragma once

#include "setup/deployment.h"

#include <string>
#include <vector>

namespace slabcast {

struct RoleCommand {
    std::string host;
    std::string role;    // "receive", "stage", "shuffle" or "control"
    std::string volume;  // the volume it serves; empty for "control"
    int stream = -1;     // a shuffler's stream
    std::vector<std::string> argv;  // argv[0] is "slabcast"
    std::string note;    // printed above the command as a comment: what it will hold (receivers)
};

// Every role's command, in start order.
std::vector<RoleCommand> plan_roles(const Deployment& d);

// `slabcast plan`: read_deployment, then plan_roles printed, one command a
// line under a "# HOST: ROLE" line per host, or (`only_host` not empty) that
// host's commands only. Pure text in, text out, so that it can be fuzzed
// (testing/fuzz/fuzz_plan.cpp).
std::string plan_commands(const std::string& json_text, const std::string& config_name, const std::string& only_host);
// The same for a deployment already read (`slabcast plan` also checks its memory).
std::string plan_commands(const Deployment& d, const std::string& config_name, const std::string& only_host);

}  // namespace slabcast
