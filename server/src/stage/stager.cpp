#include "stage/stager.h"

#include "base/numa_placement.h"
#include "base/host_checks.h"
#include "base/key_file.h"
#include "control/sync_gate.h"
#include "stage/staged_step.h"
#include "base/status_reporter.h"
#include "stage/step_copier.h"
#include "stage/staging_ring.h"
#include "mover/dest_tree.h"
#include "stage/step_pull.h"
#include "base/stop_signal.h"
#include "base/udp.h"

#include "slabcast/control_packets.h"
#include "slabcast/dataset.h"
#include "slabcast/memory_info.h"
#include "slabcast/clock.h"
#include "slabcast/units.h"
#include "slabcast/volume.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace slabcast {

// Everything the stager keeps between two turns of its loop.
class Stager::Window {
public:
    Window(const StageOptions& o, StatusReporter& status)
        : o_(o), status_(status), streams_(parse_index_list(o.streams, kMaxAxis - 1, "--streams")) {
        if (::mkdir(o.staging.c_str(), 0750) != 0 && errno != EEXIST)
            throw std::runtime_error(o.staging + ": cannot create staging directory: " + std::strerror(errno));
        require_own_directory(o.staging);
        UniqueFd directory = take_staging_directory(o.staging);
        dataset_ = load_dataset();
        const std::uint64_t free_now = free_bytes(o.staging);
        budget_ = o.budget.empty() ? free_now / 2 : parse_bytes(o.budget);
        const std::uint64_t step = dataset_.step_bytes();
        if (budget_ < step)
            throw std::runtime_error("staging budget " + std::to_string(budget_ >> 20) + " MiB is smaller than one step (" +
                                     std::to_string(step >> 20) + " MiB); raise --budget or free " + o.staging);
        window_ = static_cast<long>(std::min<std::uint64_t>(budget_ / step, dataset_.steps.size()));
        // The steps the window holds must fit the staging area now: a budget
        // beyond its free space would fill it, and a full tmpfs fails each copy.
        require_free_space(o.staging, static_cast<std::uint64_t>(window_) * step,
                           fmt::format("the staging window ({} step(s) of {}, --budget {})", window_, format_bytes(step),
                                       o.budget.empty() ? "half the free space" : o.budget));
        // A dataset that fits comfortably in memory stays in the page cache for
        // the next lap; a larger one is read once per lap and evicted as it goes.
        drop_source_cache_ = !stays_in_page_cache(step * dataset_.steps.size());
        if (!o.sync.empty()) {
            const Endpoint e = parse_endpoint(o.sync);
            sync_ = Socket(open_udp_socket(e.addr.ss_family));
            bind_socket(sync_.fd(), e);
            gate_.emplace("stage", o.key_file, o.controller);
            set_receive_timeout(sync_.fd(), 5);
        }
        // A stager that was killed left its steps' names (holding its slots'
        // memory) and the shufflers' markers: nothing is staged yet.
        for (const DatasetStep& s : dataset_.steps) remove_step(Staged{s.file, -1});
        // Pulled steps arrive as files of their own (the data mover writes them).
        if (o.from.empty()) ring_.emplace(std::move(directory), o.staging, step, window_);
        else directory_ = std::move(directory);
        warn_limits("stage", {check_staging_pages(o.staging)});
        spdlog::info("stage: {} steps of {} MiB from {} into {}, budget {} MiB ({} steps ahead), {} shuffler(s){}",
                     dataset_.steps.size(), step >> 20, dataset_.directory, o.staging, budget_ >> 20, window_,
                     streams_.size(), o.sync.empty() ? "" : ", sync on " + o.sync);
    }

    StageCounters& counters() { return counters_; }

    void run() {
        while (!stop_requested()) {
            poll_sync();
            free_done_steps();
            if (!copier_) start_next_copy();
            if (copier_) continue_copy();
            else if (sync_.fd() < 0) ::usleep(5000);  // nothing to do: poll_sync otherwise waits
            counters_.staged = static_cast<int>(staged_.size());
            if (!o_.loop && cursor_ >= static_cast<long>(dataset_.steps.size()) && staged_.empty() && !copier_) {
                spdlog::info("stage: every step has been sent; waiting for a sync to start again");
                while (!stop_requested() && cursor_ >= static_cast<long>(dataset_.steps.size())) {
                    poll_sync();
                    if (sync_.fd() < 0) ::usleep(50000);
                }
            }
        }
        // Leave nothing behind in shared memory.
        drop_copy();
        for (auto& [pos, staged] : staged_) remove_step(staged);
        if (!o_.from.empty()) std::filesystem::remove_all(o_.staging + "/.slabcast-dataset");
    }

private:
    // Local: the dataset's directory. --from: its dataset.json is pulled from
    // the data host first (into a hidden directory of the staging area).
    Dataset load_dataset() {
        if (o_.from.empty()) return read_dataset(o_.dataset);
        const auto colon = o_.from.rfind(':');
        pull_.host = colon == std::string::npos ? o_.from : o_.from.substr(0, colon);
        const auto port = parse_whole(colon == std::string::npos ? "7100" : o_.from.substr(colon + 1), 1, 65535);
        if (!port) throw std::invalid_argument("--from '" + o_.from + "': expected HOST[:PORT], PORT 1..65535");
        pull_.port = static_cast<int>(*port);
        pull_.streams = o_.pull_streams;
        if (!o_.key_file.empty()) pull_.key = load_sync_key(o_.key_file);  // the data host's serve checks it too
        std::string descriptor = o_.dataset;
        while (!descriptor.empty() && descriptor.back() == '/') descriptor.pop_back();
        if (descriptor.size() < 5 || descriptor.compare(descriptor.size() - 5, 5, ".json") != 0) descriptor += "/dataset.json";
        const auto [dir, name] = mover::split_path(descriptor);
        remote_dir_ = dir;
        const std::string local = o_.staging + "/.slabcast-dataset";
        ::unlink((local + "/" + name).c_str());  // always the server's current one
        mover::Pull::now(pull_, {descriptor}, local);
        Dataset d = read_dataset(local + "/" + name);
        d.directory = o_.from + ":" + remote_dir_;
        return d;
    }

    // Where a step is staged: a slot of the ring, or (pulled) a file of its own.
    struct Staged {
        std::string file;
        int slot = -1;
    };

    const DatasetStep& step_at(long pos) const {
        return dataset_.steps[static_cast<std::size_t>(pos % static_cast<long>(dataset_.steps.size()))];
    }
    bool in_window(long pos) const {
        return pos >= cursor_ && pos < cursor_ + window_ && (o_.loop || pos < static_cast<long>(dataset_.steps.size()));
    }

    void poll_sync() {
        if (sync_.fd() < 0) return;
        std::uint8_t buf[2048];
        for (int i = 0; i < 64; ++i) {
            sockaddr_storage from{};
            socklen_t from_len = sizeof from;
            const ssize_t n = ::recvfrom(sync_.fd(), buf, sizeof buf, i == 0 ? 0 : MSG_DONTWAIT,
                                         reinterpret_cast<sockaddr*>(&from), &from_len);
            if (n < 0) return;
            control::Sync sync;
            if (gate_->admit(buf, static_cast<std::size_t>(n), from, sync) != SyncGate::Verdict::New) continue;
            last_sync_ = sync;
            move_cursor_to(sync.step);
        }
    }

    // The controller asked for `step`: the window now starts there, and staged
    // steps before it are no longer needed.
    void move_cursor_to(int step) {
        long pos = -1;
        const long n = static_cast<long>(dataset_.steps.size());
        if (o_.loop) {  // the next lap position of that step at or after the cursor
            for (long p = cursor_; p < cursor_ + n && pos < 0; ++p)
                if (step_at(p).number == step) pos = p;
        } else {
            for (long p = 0; p < n && pos < 0; ++p)
                if (dataset_.steps[static_cast<std::size_t>(p)].number == step) pos = p;
        }
        if (pos < 0) return;
        if (pos < cursor_) consumed_.clear();  // the controller started over
        cursor_ = pos;
        counters_.cursor_step = step;
        consumed_.erase(consumed_.begin(), consumed_.lower_bound(cursor_));
        for (auto it = staged_.begin(); it != staged_.end();) {
            if (in_window(it->first)) {
                ++it;
                continue;
            }
            spdlog::info("stage: controller moved past step {}; freeing it", step_at(it->first).number);
            remove_step(it->second);
            ++counters_.steps_freed;
            it = staged_.erase(it);
        }
        if (copier_ && !in_window(copying_pos_)) drop_copy();
    }

    void free_done_steps() {
        for (auto it = staged_.begin(); it != staged_.end();) {
            bool all = true;
            for (int s : streams_) all &= ::access(done_marker_path(o_.staging, it->second.file, s).c_str(), F_OK) == 0;
            if (!all) {
                ++it;
                continue;
            }
            remove_step(it->second);
            ++counters_.steps_freed;
            consumed_.insert(it->first);
            it = staged_.erase(it);
        }
        // Skip past positions already consumed so the window keeps moving.
        while (consumed_.count(cursor_)) consumed_.erase(cursor_++);
    }

    void remove_step(const Staged& staged) {
        if (staged.slot >= 0) ring_->unpublish(staged.slot);
        else ::unlink((o_.staging + "/" + staged.file).c_str());
        for (int s : streams_) ::unlink(done_marker_path(o_.staging, staged.file, s).c_str());
    }

    // The step in progress is dropped; its slot holds nothing whole.
    void drop_copy() {
        copier_.reset();
        if (copying_slot_ >= 0) ring_->abandon(copying_slot_);
        copying_slot_ = -1;
    }

    void start_next_copy() {
        for (long pos = cursor_; in_window(pos); ++pos) {
            if (staged_.count(pos) || consumed_.count(pos)) continue;
            const DatasetStep& step = step_at(pos);
            bool busy = false;  // the same file staged for another lap
            for (auto& [p, staged] : staged_) busy |= staged.file == step.file;
            if (busy) continue;
            for (int s : streams_) ::unlink(done_marker_path(o_.staging, step.file, s).c_str());
            try {
                const std::int64_t t0 = monotonic_ns();
                if (!o_.from.empty()) {
                    if (step.codec != StepCodec::None)
                        throw std::runtime_error(step.file + " is stored " + to_string(step.codec) +
                                                 ": stage --from pulls raw steps only (stage it where it is stored)");
                    copier_ = std::make_unique<StepPull>(pull_, remote_dir_.empty() ? step.file : remote_dir_ + "/" + step.file,
                                                         o_.staging, dataset_.step_bytes());
                } else {
                    const std::string source = dataset_.step_path(step);
                    copying_source_ = stamp_of(source);
                    const std::optional<StagingRing::Claim> claim = ring_->claim(step.file, copying_source_);
                    if (!claim) return;  // every slot is staged or still being sent from: later
                    if (claim->holds_step) {
                        publish_again(pos, claim->slot);
                        return;
                    }
                    copying_slot_ = claim->slot;
                    if (step.codec == StepCodec::None)
                        copier_ = std::make_unique<StepCopier>(source, ring_->fd(claim->slot), dataset_.step_bytes(),
                                                               drop_source_cache_);
                    else
                        copier_ = std::make_unique<StepDecoder>(source, step.codec, ring_->fd(claim->slot),
                                                                dataset_.step_bytes());
                }
                copying_pos_ = pos;
                copy_started_ns_ = monotonic_ns();
                setup_ns_ = copy_started_ns_ - t0;
            } catch (const std::exception& e) {
                drop_copy();
                spdlog::error("stage: step {} skipped: {}", step.number, e.what());
                status_.event({{"kind", "step"}, {"step", step.number}, {"result", "skipped"}, {"problem", e.what()}});
                ++counters_.steps_skipped;
                consumed_.insert(pos);
            }
            return;
        }
    }

    // The slot still holds the step from an earlier lap, its source unchanged.
    void publish_again(long pos, int slot) {
        const DatasetStep& step = step_at(pos);
        ring_->publish(slot, step.file, copying_source_);
        spdlog::info("stage: step {} staged (still in its slot: no copy)", step.number);
        status_.event({{"kind", "step"}, {"step", step.number}, {"result", "staged"}, {"copied", false}});
        staged_[pos] = {step.file, slot};
        ++counters_.steps_staged;
        ++counters_.steps_reused;
    }

    void continue_copy() {
        const std::int64_t t0 = monotonic_ns();
        const std::uint64_t before = copier_->copied();
        bool done = false;
        try {
            done = copier_->advance(64u << 20);
            // Whole: the step appears under its name.
            if (done && copying_slot_ >= 0) ring_->publish(copying_slot_, step_at(copying_pos_).file, copying_source_);
        } catch (const std::exception& e) {
            spdlog::error("stage: step {} skipped: {}", step_at(copying_pos_).number, e.what());
            ++counters_.steps_skipped;
            consumed_.insert(copying_pos_);
            drop_copy();
            return;
        }
        counters_.bytes_read += copier_->copied() - before;
        counters_.read_ns += monotonic_ns() - t0;
        if (!done) return;
        const DatasetStep& step = step_at(copying_pos_);
        const double seconds = static_cast<double>(monotonic_ns() - copy_started_ns_) * 1e-9;
        const double gbytes_per_s = static_cast<double>(copier_->total()) / seconds * 1e-9;
        // The setup apart: reserving a new slot of 4 GiB of tmpfs (the ring's
        // first lap only) took 1.4-1.7 s on an idle machine and up to 11 s
        // beside the receiver and the renderer (docs/performance.md,
        // "Stager"), time the read rate does not show but the step's latency does.
        const double setup_seconds = static_cast<double>(setup_ns_) * 1e-9;
        spdlog::info("stage: step {} staged ({} MiB in {:.3f} s, {:.2f} GB/s, after {:.3f} s setting it up)", step.number,
                     copier_->total() >> 20, seconds, gbytes_per_s, setup_seconds);
        status_.event({{"kind", "step"}, {"step", step.number}, {"result", "staged"}, {"copied", true},
                       {"seconds", seconds}, {"gbytes_per_s", gbytes_per_s}, {"setup_seconds", setup_seconds}});
        staged_[copying_pos_] = {step.file, copying_slot_};
        ++counters_.steps_staged;
        copier_.reset();
        copying_slot_ = -1;
    }

    const StageOptions& o_;
    StatusReporter& status_;
    Dataset dataset_;
    std::vector<int> streams_;
    std::uint64_t budget_ = 0;
    long window_ = 1;
    bool drop_source_cache_ = false;
    Socket sync_;
    std::optional<SyncGate> gate_;  // only with --sync
    std::optional<control::Sync> last_sync_;
    long cursor_ = 0;                      // schedule position of the next step to be sent
    std::optional<StagingRing> ring_;      // local steps' slots (not with --from)
    UniqueFd directory_;                   // --from: the staging directory, taken (the ring holds it otherwise)
    std::map<long, Staged> staged_;        // schedule position -> where it is staged
    std::set<long> consumed_;              // positions sent (or skipped) but not yet passed
    std::unique_ptr<StepFetch> copier_;
    mover::PullSettings pull_;  // --from
    std::string remote_dir_;    // --from: the dataset's directory beneath the server's root
    long copying_pos_ = 0;
    int copying_slot_ = -1;        // the ring's slot being copied into
    SourceStamp copying_source_;   // what its source file was
    std::int64_t copy_started_ns_ = 0;
    std::int64_t setup_ns_ = 0;  // a new slot's reservation, the pull's connection
    StageCounters counters_;
};

Stager::Stager(const StageOptions& o, StatusReporter& status) : window_(std::make_unique<Window>(o, status)) {}
Stager::~Stager() = default;
StageCounters& Stager::counters() { return window_->counters(); }
void Stager::run() { window_->run(); }

}  // namespace slabcast
