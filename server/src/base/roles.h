// Each role is a subcommand of the one `slabcast` binary. A role registers its
// options on the root app and, when chosen, leaves the function to run in `run`.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace slabcast {

using RoleMain = std::function<int()>;

void register_stage(CLI::App& root, RoleMain& run);
void register_shuffle(CLI::App& root, RoleMain& run);
void register_control(CLI::App& root, RoleMain& run);
void register_receive(CLI::App& root, RoleMain& run);
void register_record(CLI::App& root, RoleMain& run);
void register_replay(CLI::App& root, RoleMain& run);
void register_clean(CLI::App& root, RoleMain& run);
void register_demo(CLI::App& root, RoleMain& run);
void register_plan(CLI::App& root, RoleMain& run);
void register_plot(CLI::App& root, RoleMain& run);
void register_tune(CLI::App& root, RoleMain& run);
void register_keygen(CLI::App& root, RoleMain& run);
void register_serve(CLI::App& root, RoleMain& run);
void register_move(CLI::App& root, RoleMain& run);

}  // namespace slabcast
