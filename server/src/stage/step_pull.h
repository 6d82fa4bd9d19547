// A step pulled from a data host into the staging area (`slabcast stage
// --from`): the data mover's pull from a `slabcast serve --allow-pull`, in the
// background, over several TCP streams, each block checked; the file appears
// under its name only once whole and verified.
#pragma once

#include "mover/pull.h"
#include "stage/step_copier.h"

#include <memory>
#include <string>

namespace slabcast {

class StepPull : public StepFetch {
public:
    // `remote_path`: the step file beneath the server's root; it arrives as
    // `staging`/its name, which must come to `expected_bytes`.
    StepPull(const mover::PullSettings& from, const std::string& remote_path, const std::string& staging,
             std::uint64_t expected_bytes);
    ~StepPull() override;  // an unfinished pull is stopped and what it wrote removed

    bool advance(std::uint64_t max_bytes) override;
    std::uint64_t copied() const override;
    std::uint64_t total() const override { return total_; }

private:
    std::string staging_, name_;
    std::uint64_t total_;
    std::unique_ptr<mover::Pull> pull_;
    bool finished_ = false;
};

}  // namespace slabcast
