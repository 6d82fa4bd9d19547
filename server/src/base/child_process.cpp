#include "base/child_process.h"

#include "slabcast/unique_fd.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace slabcast {

ChildProcess::ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_), status_(o.status_), name_(std::move(o.name_)) {
    o.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
    if (this != &o) {
        stop();
        pid_ = o.pid_;
        status_ = o.status_;
        name_ = std::move(o.name_);
        o.pid_ = -1;
    }
    return *this;
}

ChildProcess::~ChildProcess() { stop(); }

ChildProcess ChildProcess::start(const std::vector<std::string>& argv, const std::string& log_path,
                                 const std::vector<std::string>& env) {
    if (argv.empty()) throw std::invalid_argument("no program to start");
    // Everything the child needs is prepared before fork: after it, only
    // async-signal-safe calls.
    std::vector<std::string> environment;
    for (char** e = environ; *e; ++e) environment.emplace_back(*e);
    for (const auto& add : env) {
        const std::string key = add.substr(0, add.find('=') + 1);
        for (auto it = environment.begin(); it != environment.end();)
            it = it->rfind(key, 0) == 0 ? environment.erase(it) : it + 1;
        environment.push_back(add);
    }
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const std::string program = argv[0].find('/') == std::string::npos ? find_in_path(argv[0]) : argv[0];
    if (program.empty()) throw std::runtime_error(argv[0] + ": not found in PATH");
    UniqueFd log_fd;
    if (!log_path.empty()) {
        log_fd.reset(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
        if (!log_fd.valid()) throw std::runtime_error(log_path + ": cannot open log: " + std::strerror(errno));
    }
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        if (log_fd.valid()) {
            ::dup2(log_fd.get(), STDOUT_FILENO);
            ::dup2(log_fd.get(), STDERR_FILENO);
        }
        ::execve(program.c_str(), args.data(), envp.data());
        _exit(127);
    }
    log_fd.reset();  // the child has its own copy
    ChildProcess c;
    c.pid_ = pid;
    c.name_ = argv[0];
    return c;
}

bool ChildProcess::running() {
    if (pid_ < 0) return false;
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
        pid_ = -1;
        return false;
    }
    return true;
}

bool ChildProcess::wait_for(int timeout_ms) {
    for (int waited = 0; running(); waited += 20) {
        if (waited >= timeout_ms) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

int ChildProcess::stop(int grace_ms) {
    if (!running()) return status_;
    ::kill(pid_, SIGTERM);
    if (!wait_for(grace_ms)) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        pid_ = -1;
    }
    return status_;
}

std::string find_in_path(const std::string& program) {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    std::size_t pos = 0;
    while (pos <= dirs.size()) {
        std::size_t end = dirs.find(':', pos);
        if (end == std::string::npos) end = dirs.size();
        const std::string candidate = dirs.substr(pos, end - pos) + "/" + program;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        pos = end + 1;
    }
    return {};
}

}  // namespace slabcast
