#include "record/recorder.h"

#include "base/roles.h"
#include "base/status_reporter.h"
#include "base/stop_signal.h"
#include "record/recording_ring.h"
#include "record/step_capture.h"

#include "slabcast/clock.h"
#include "slabcast/descriptor.h"
#include "slabcast/live_slabs.h"
#include "slabcast/slab_pool.h"
#include "slabcast/step_choice.h"
#include "slabcast/units.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace slabcast {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(2);

struct RecordCounters {
    std::atomic<std::uint64_t> recorded{0}, skipped_busy{0}, skipped_full{0}, published{0}, stored_bytes{0};
    std::atomic<std::uint64_t> seen{0};  // whole steps looked at: taken, or skipped while the disk was busy
    // Not recorded for another reason (logged): a slab of another shape, a write error.
    std::atomic<std::uint64_t> failed{0};
    std::atomic<std::int64_t> last_step{-1};
    // Published steps gone before the recorder looked (steps faster than it
    // polls, or a recorder left no CPU): neither recorded nor skipped.
    std::uint64_t missed() const { return published > seen ? published - seen : 0; }
    // Taken, not yet written or given up.
    std::uint64_t pending() const {
        const std::uint64_t done = skipped_busy + recorded + skipped_full + failed;
        return seen > done ? seen - done : 0;
    }
};

// The volume the descriptor describes, as a recording's shape.
Dataset shape_of(const Descriptor& d) {
    Dataset s;
    s.name = d.name;
    s.field = d.field;
    s.dims = d.dims;
    for (int i = 0; i < 3; ++i) {
        s.origin[i] = d.origin[i];
        s.spacing[i] = d.spacing[i];
    }
    return s;
}

Descriptor wait_for_descriptor(const std::string& path, double wait_s) {
    const std::int64_t give_up = monotonic_ns() + static_cast<std::int64_t>(wait_s * 1e9);
    for (;;) {
        try {
            Descriptor d = read_descriptor(path);
            const int slabs = slab_count(d.dims, d.slab_depth);
            if (static_cast<int>(d.slabs.size()) != slabs)
                throw std::runtime_error(path + ": lists " + std::to_string(d.slabs.size()) + " of the volume's " +
                                         std::to_string(slabs) + " slabs: record runs where every slab is received");
            return d;
        } catch (const std::runtime_error&) {
            if (monotonic_ns() > give_up || stop_requested()) throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

// The writing thread and the copies it writes from: each copy is free, or
// waits in the queue, or is being written.
class DiskWriter {
public:
    DiskWriter(RecordingRing& ring, const Dims& dims, int copies, RecordCounters& c, StatusReporter& status)
        : ring_(ring), counters_(c), status_(status) {
        for (int i = 0; i < copies; ++i) {
            copies_.push_back(std::make_unique<StepCapture>(dims));
            free_.push_back(copies_.back().get());
        }
        thread_ = std::thread([this] { loop(); });
    }
    ~DiskWriter() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ending_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    // A free copy, or nullptr while every copy waits for the disk.
    StepCapture* free_copy() {
        std::lock_guard<std::mutex> lock(mutex_);
        if (free_.empty()) return nullptr;
        StepCapture* c = free_.front();
        free_.pop_front();
        return c;
    }
    void give_back(StepCapture* c) {
        std::lock_guard<std::mutex> lock(mutex_);
        free_.push_back(c);
    }
    void write(StepCapture* c) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.push_back(c);
        }
        wake_.notify_all();
    }
    // Waits until everything queued is written.
    void drain() {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
        count_skips_in_ring();
    }

private:
    void loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return ending_ || !queue_.empty(); });
            if (queue_.empty()) return;
            StepCapture* c = queue_.front();
            queue_.pop_front();
            busy_ = true;
            lock.unlock();
            record(c->step());
            lock.lock();
            busy_ = false;
            free_.push_back(c);
            idle_.notify_all();
        }
    }

    void record(const StepToRecord& step) {
        const std::int64_t t0 = monotonic_ns();
        count_skips_in_ring();
        RecordingRing::Result r;
        try {
            r = ring_.add(step);
        } catch (const std::exception& e) {
            // Nothing of the step is listed (RecordingRing::add); the recorder goes on.
            ++counters_.failed;
            spdlog::error("record: step {} not recorded: {}", step.number, e.what());
            status_.event({{"kind", "step"}, {"step", step.number}, {"result", "failed"}, {"problem", e.what()}});
            return;
        }
        const double seconds = static_cast<double>(monotonic_ns() - t0) * 1e-9;
        counters_.stored_bytes = ring_.stored_bytes();
        if (r == RecordingRing::Result::DiskFull) {
            ++counters_.skipped_full;
            spdlog::warn("record: step {} skipped: the disk is full", step.number);
            status_.event({{"kind", "step"}, {"step", step.number}, {"result", "skipped"}, {"problem", "disk full"}});
            return;
        }
        ++counters_.recorded;
        counters_.last_step = step.number;
        const RecordedStep& rep = *ring_.dataset().steps.back().recorded;
        status_.event({{"kind", "step"},
                       {"step", step.number},
                       {"result", "recorded"},
                       {"seconds", seconds},
                       {"stored_bytes", rep.stored_bytes},
                       {"holes", rep.holes},
                       {"repaired", rep.repaired},
                       {"complete", rep.complete}});
    }

    // The ring is the writing thread's (or drained): the steps skipped while
    // the disk was busy go into its counters here.
    void count_skips_in_ring() {
        const std::uint64_t busy = counters_.skipped_busy;
        ring_.count_skipped(busy - skips_counted_);
        skips_counted_ = busy;
    }

    RecordingRing& ring_;
    RecordCounters& counters_;
    StatusReporter& status_;
    std::uint64_t skips_counted_ = 0;
    std::vector<std::unique_ptr<StepCapture>> copies_;
    std::mutex mutex_;
    std::condition_variable wake_, idle_;
    std::deque<StepCapture*> free_, queue_;
    bool busy_ = false;
    bool ending_ = false;
    std::thread thread_;
};

// Follows the receiver's publications and hands each new whole step to the writer.
class Follower {
public:
    Follower(const RecordOptions& o, const Descriptor& d, DiskWriter& writer, RecordCounters& c,
             StatusReporter& status)
        : o_(o), descriptor_(d), writer_(writer), counters_(c), status_(status) {}

    void run() {
        spdlog::info("record: following {}", o_.descriptor);
        std::optional<std::uint64_t> published_before;  // by the first slab, when first looked at
        while (!stop_requested() && (o_.steps == 0 || counters_.recorded < o_.steps)) {
            open_slabs();
            note_step_starts();
            SlabHeader first{};
            if (!used_.empty() && used_.front()->read_header(first)) {
                const std::uint64_t p = first.live.publications.load();
                if (!published_before || p < *published_before) published_before = p;  // (a new receiver: afresh)
                counters_.published = p - *published_before;
            }
            const std::uint64_t signature = live_signature(o_.descriptor, used_);
            if (signature == last_signature_ || slabs_.size() != descriptor_.slabs.size()) {
                std::this_thread::sleep_for(kPoll);
                continue;
            }
            // --steps N counts steps recorded: one the disk skipped or failed
            // leaves room for another, and no more are taken than may be needed.
            if (o_.steps && counters_.recorded + counters_.pending() >= o_.steps) {
                std::this_thread::sleep_for(kPoll);
                continue;
            }
            last_signature_ = signature;
            take_newest();
        }
    }

private:
    // Every slab, re-opened when its receiver replaced the file (a restart).
    void open_slabs() {
        try {
            const Descriptor now = read_descriptor(o_.descriptor);
            if (now.dims == descriptor_.dims && now.field == descriptor_.field) descriptor_ = now;
        } catch (const std::exception&) {
            // Being rewritten, or gone while the receiver restarts: keep the last.
        }
        slabs_.clear();
        used_.clear();
        for (const auto& e : descriptor_.slabs) {
            try {
                slabs_[e.index] = pool_.get(descriptor_, o_.descriptor, e);
                used_.push_back(slabs_[e.index]);
            } catch (const std::exception&) {
                // Not there yet: no step is whole until every slab is.
            }
        }
    }

    // When the receivers began each step (the first slab to, within a poll):
    // what a replay paces by. A step heard again starts afresh.
    void note_step_starts() {
        for (const auto& m : used_) {
            SlabHeader h{};
            if (!m->read_header(h)) continue;
            const std::int64_t step = h.live.step.load();
            // A step under way when first looked at began when nobody saw.
            const auto [was, first_look] = writing_.try_emplace(m->geometry().index, step);
            if (first_look || was->second == step) continue;
            was->second = step;
            if (step < 0) continue;
            const std::int64_t now = realtime_ns();
            auto [it, fresh] = started_.try_emplace(step, now);
            if (!fresh && now - it->second > kStartForgotten_ns) it->second = now;
            if (started_.size() > 256) started_.erase(started_.begin());
        }
    }

    void take_newest() {
        const StepChoice choice = choose_whole_step(slabs_);
        if (choice.step < 0 || choice.buffers.size() != slabs_.size()) return;
        const std::uint64_t number = choice.buffers.begin()->second.pin->publication().number;
        if (choice.step == last_step_ && number == last_number_) return;
        last_step_ = choice.step;
        last_number_ = number;
        ++counters_.seen;
        if (choice.step > INT_MAX) {
            spdlog::warn("record: step {} is past the largest a dataset numbers: skipped", choice.step);
            ++counters_.failed;
            return;
        }
        StepCapture* copy = writer_.free_copy();
        if (!copy) {
            ++counters_.skipped_busy;
            spdlog::debug("record: step {} skipped: the disk is still writing the steps before", choice.step);
            status_.event({{"kind", "step"}, {"step", choice.step}, {"result", "skipped"}, {"problem", "disk busy"}});
            return;
        }
        try {
            const auto started = started_.find(choice.step);
            copy->take(choice, started == started_.end() ? 0 : started->second);
        } catch (const std::exception& e) {
            writer_.give_back(copy);
            ++counters_.failed;
            spdlog::warn("record: step {} not recorded: {}", choice.step, e.what());
            return;
        }
        writer_.write(copy);  // the pins go with `choice`, now
    }

    const RecordOptions& o_;
    Descriptor descriptor_;
    DiskWriter& writer_;
    RecordCounters& counters_;
    StatusReporter& status_;
    SlabPool pool_;
    std::map<int, SlabMappingPtr> slabs_;
    std::vector<SlabMappingPtr> used_;
    std::uint64_t last_signature_ = 0;
    std::int64_t last_step_ = -1;
    std::uint64_t last_number_ = 0;
    // note_step_starts: the step each slab was writing at the last poll, and
    // when the first of them began each step (a step begun again after this
    // long is another lap's).
    static constexpr std::int64_t kStartForgotten_ns = 2'000'000'000;
    std::map<int, std::int64_t> writing_;
    std::map<std::int64_t, std::int64_t> started_;
};

}  // namespace

int run_record(const RecordOptions& o) {
    // Before any thread starts: Linux keeps a nice value per thread, and new
    // threads take their creator's.
    if (o.nice > 0 && ::setpriority(PRIO_PROCESS, 0, o.nice) != 0)
        spdlog::warn("record: cannot lower its CPU priority to nice {}: {}", o.nice, std::strerror(errno));
    const StepCodec codec = parse_step_codec(o.codec);
    const std::uint64_t budget = o.budget.empty() || o.budget == "0" ? 0 : parse_bytes(o.budget);
    const Descriptor d = wait_for_descriptor(o.descriptor, o.wait_s);
    RecordingRing ring(o.out, shape_of(d), o.descriptor, d.slab_depth, codec, budget);
    const std::uint64_t step_bytes = static_cast<std::uint64_t>(d.dims.count()) * (sizeof(float) + 1);
    spdlog::info("record: {} ({} {}) into {} as {}, {} in memory for {} steps, budget {}", o.descriptor, d.field,
                 to_string(d.dims), o.out, to_string(codec), format_bytes(step_bytes * o.copies), o.copies,
                 budget ? format_bytes(budget) : "none (every step kept)");
    RecordCounters c;
    StatusReporter status("record", o.stats_json);
    {
        DiskWriter writer(ring, d.dims, o.copies, c, status);
        status.start([&] {
            const std::uint64_t skipped = c.skipped_busy + c.skipped_full;
            return nlohmann::json{
                {"line", fmt::format("record: step {}, {} recorded, {} skipped ({} disk busy, {} disk full), "
                                     "{} missed, {} published, {} on disk",
                                     c.last_step.load(), c.recorded.load(), skipped, c.skipped_busy.load(),
                                     c.skipped_full.load(), c.missed(), c.published.load(),
                                     format_bytes(c.stored_bytes))},
                {"last_step", c.last_step.load()}, {"recorded", c.recorded.load()},
                {"skipped_busy", c.skipped_busy.load()}, {"skipped_full", c.skipped_full.load()},
                {"missed", c.missed()}, {"pending", c.pending()}, {"published", c.published.load()},
                {"stored_bytes", c.stored_bytes.load()}};
        });
        Follower(o, d, writer, c, status).run();
        writer.drain();
    }
    ring.flush();
    status.stop();
    spdlog::info("record: {} holds {} steps ({}); this run recorded {} of {} published, skipped {} (disk busy) "
                 "and {} (disk full), missed {}; {} evicted in all",
                 o.out, ring.dataset().steps.size(), format_bytes(ring.stored_bytes()), c.recorded.load(),
                 c.published.load(), c.skipped_busy.load(), c.skipped_full.load(), c.missed(),
                 ring.dataset().recording->steps_evicted);
    return 0;
}

void register_record(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<RecordOptions>();
    CLI::App* c = root.add_subcommand("record", "write every published step of a live volume to a recording");
    c->add_option("--descriptor", o->descriptor, "the receiver's .slabcast descriptor")->required();
    c->add_option("--out", o->out, "the recording's directory (created; a recording there is gone on with)")
        ->required();
    c->add_option("--codec", o->codec, "how step files are stored: lz4 (lossless) or none")
        ->capture_default_str()
        ->check(CLI::IsMember({"lz4", "none"}));
    c->add_option("--budget", o->budget, "disk for the recording, e.g. 100G: keeps the newest steps that fit "
                                         "(default: every step)");
    c->add_option("--steps", o->steps, "stop after recording this many steps (default: until stopped)");
    c->add_option("--wait", o->wait_s, "seconds to wait for the descriptor")->capture_default_str();
    c->add_option("--copies", o->copies, "steps held in memory for the disk (one being written, the rest waiting)")
        ->capture_default_str()
        ->check(CLI::Range(1, 8));
    c->add_option("--nice", o->nice, "CPU priority, 0 (as the data path) to 19 (only what it leaves)")
        ->capture_default_str()
        ->check(CLI::Range(0, 19));
    c->add_option("--stats-json", o->stats_json, "append JSON lines (status every second, step reports)");
    c->callback([o, &run] { run = [o] { return run_record(*o); }; });
}

}  // namespace slabcast
