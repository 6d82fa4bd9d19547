// Child processes of `slabcast demo`: started with their output in a log file,
// stopped with SIGTERM (then SIGKILL if they linger), always reaped.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace slabcast {

class ChildProcess {
public:
    ChildProcess() = default;
    ChildProcess(ChildProcess&& o) noexcept;
    ChildProcess& operator=(ChildProcess&& o) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ~ChildProcess();  // stops it if still running

    // Runs argv[0] (searched in PATH) with stdout and stderr appended to
    // `log_path` ("" = inherit), and `env` ("NAME=value") added to ours.
    // Throws std::runtime_error when it cannot be started.
    static ChildProcess start(const std::vector<std::string>& argv, const std::string& log_path,
                              const std::vector<std::string>& env = {});

    bool running();
    // Waits up to `timeout_ms` for it to exit by itself; true if it did.
    bool wait_for(int timeout_ms);
    // SIGTERM, up to `grace_ms` to exit, then SIGKILL. Returns the exit status
    // (as from waitpid), or -1 if it had already been reaped.
    int stop(int grace_ms = 5000);
    int exit_status() const { return status_; }
    const std::string& name() const { return name_; }

private:
    pid_t pid_ = -1;
    int status_ = -1;
    std::string name_;
};

// An executable found in PATH, or "" when there is none.
std::string find_in_path(const std::string& program);

}  // namespace slabcast
