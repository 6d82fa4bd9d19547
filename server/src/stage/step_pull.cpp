#include "stage/step_pull.h"

#include "mover/journal.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace slabcast {

StepPull::StepPull(const mover::PullSettings& from, const std::string& remote_path, const std::string& staging,
                   std::uint64_t expected_bytes)
    : staging_(staging), name_(remote_path.substr(remote_path.find_last_of('/') + 1)), total_(expected_bytes) {
    pull_ = std::make_unique<mover::Pull>(from, std::vector<std::string>{remote_path}, staging);
}

StepPull::~StepPull() {
    pull_.reset();  // stops it
    if (!finished_) {
        // The pull may have moved the step into place after advance() last
        // looked (the stager stopped, or the controller moved past it, at
        // that moment): a step that was never handed over goes too.
        ::unlink((staging_ + "/" + name_).c_str());
        ::unlink((staging_ + "/" + mover::part_file_name(name_)).c_str());
        ::unlink((staging_ + "/" + mover::Journal::kName).c_str());
    }
}

std::uint64_t StepPull::copied() const { return pull_->bytes_written(); }

// The pull runs by itself; this only waits a little for it (the stager's
// loop has syncs to listen to meanwhile) and checks the outcome.
bool StepPull::advance(std::uint64_t) {
    if (finished_) return true;
    for (int i = 0; i < 20 && !pull_->finished(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!pull_->finished()) return false;
    pull_->check();
    const std::string path = staging_ + "/" + name_;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != total_) {
        ::unlink(path.c_str());
        throw std::runtime_error(name_ + " from the data host is " + std::to_string(st.st_size) + " bytes, expected " +
                                 std::to_string(total_) + " (NX*NY*NZ float32)");
    }
    finished_ = true;
    return true;
}

}  // namespace slabcast
