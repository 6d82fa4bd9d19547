// slabcast: stream a simulation's volume over UDP into shared memory for ParaView.
#include "base/roles.h"
#include "base/stop_signal.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <exception>

int main(int argc, char** argv) {
    CLI::App app{"slabcast: live volume streaming over UDP into shared memory, rendered by ParaView"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "slabcast 0.1.0");
    std::string log_level = "info";
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

    slabcast::RoleMain run;
    slabcast::register_stage(app, run);
    slabcast::register_shuffle(app, run);
    slabcast::register_control(app, run);
    slabcast::register_receive(app, run);
    slabcast::register_record(app, run);
    slabcast::register_replay(app, run);
    slabcast::register_clean(app, run);
    slabcast::register_demo(app, run);
    slabcast::register_plan(app, run);
    slabcast::register_plot(app, run);
    slabcast::register_tune(app, run);
    slabcast::register_keygen(app, run);
    slabcast::register_serve(app, run);
    slabcast::register_move(app, run);

    CLI11_PARSE(app, argc, argv);
    // Logs and status lines go to stderr; stdout stays free for data a user pipes on.
    spdlog::set_default_logger(spdlog::stderr_color_mt("slabcast"));
    spdlog::set_level(spdlog::level::from_str(log_level));
    spdlog::set_pattern("%H:%M:%S.%e %^%l%$ %v");
    slabcast::install_stop_handlers();
    try {
        return run();
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
}
