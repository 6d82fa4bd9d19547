// `slabcast replay DIR`: a recording (or any dataset) streamed into receivers
// as a shuffler would send it, one stream a slab, with the shuffler's own
// sending side (shuffle/slab_sender.h): at the pace it was recorded (--speed),
// and with --losses the values each step lost left out, so that a receiver
// publishes the same holes, aged the same way. For a booth demo's rehearsal,
// or a bug report a colleague can play into their own receiver.
#include "base/roles.h"
#include "base/status_reporter.h"
#include "base/stop_signal.h"
#include "base/udp.h"
#include "base/option_checks.h"
#include "replay/replay_steps.h"
#include "shuffle/slab_sender.h"

#include "slabcast/clock.h"
#include "slabcast/dataset.h"
#include "slabcast/units.h"
#include "slabcast/volume.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace slabcast {
namespace {

struct ReplayOptions {
    std::string recording;
    std::vector<std::string> to;
    std::string speed = "1";
    bool losses = false;
    int slab_depth = 0;
    int ghost_planes = 1;
    std::string rate = "1G";
    std::string wire = "run";
    std::string codec = "none";
    std::string fec = "none";
    std::string bind;
    int loops = 1;
    std::string stats_json;
};

// One stream: its slab's planes (ghost plane first) and, with --losses, what
// its walker leaves out: the recorded ages of the owned planes; the ghost
// plane, which the recording holds as the slab below's owned plane, is sent
// whole.
struct Stream {
    SlabGeometry geometry;
    std::unique_ptr<SlabSender> sender;
    std::vector<std::uint8_t> lost;
};

bool wait_until(std::int64_t deadline_ns) {
    while (!stop_requested()) {
        const std::int64_t left = deadline_ns - monotonic_ns();
        if (left <= 0) return true;
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::int64_t>(left, 50'000'000)));
    }
    return false;
}

class Replay {
public:
    explicit Replay(const ReplayOptions& o)
        : o_(o), dataset_(read_dataset(o.recording)), speed_(parse_replay_speed(o.speed)),
          schedule_(replay_schedule(dataset_, speed_)), volume_(dataset_.dims) {
        const int depth = o.slab_depth ? o.slab_depth
                                       : dataset_.recording && dataset_.recording->slab_depth
                                             ? dataset_.recording->slab_depth
                                             : 0;
        if (depth <= 0)
            throw std::invalid_argument(o.recording + ": no slab depth recorded: give --slab-depth");
        if (const std::string p = volume_problem(dataset_.dims, depth); !p.empty()) throw std::invalid_argument(p);
        const std::vector<std::string> to = expand_port_ranges(o.to);
        const int slabs = slab_count(dataset_.dims, depth);
        if (static_cast<int>(to.size()) != slabs)
            throw std::invalid_argument("--to names " + std::to_string(to.size()) + " receivers' addresses; " +
                                        to_string(dataset_.dims) + " in slabs of " + std::to_string(depth) +
                                        " planes is " + std::to_string(slabs) + " streams");
        if (o.losses && o.wire != "run")
            throw std::invalid_argument("--losses sends run packets (--wire run): they leave out any value");
        for (int k = 0; k < slabs; ++k) {
            Stream s;
            s.geometry = slab_geometry(dataset_.dims, depth, k, o.ghost_planes);
            SlabSenderOptions so;
            so.dims = dataset_.dims;
            so.z_begin = s.geometry.stored_z_begin;
            so.z_end = s.geometry.z_end;
            so.ghost_planes = s.geometry.ghost_planes();
            so.slab = k;
            so.wire = parse_wire_format(o.wire);
            so.codec = run::parse_codec(o.codec);
            so.fec = fec::parse_choice(o.fec);
            so.rate_bps = parse_rate_bps(o.rate);
            so.to = to[static_cast<std::size_t>(k)];
            so.bind = o.bind;
            so.who = "replay stream " + std::to_string(k);
            s.sender = std::make_unique<SlabSender>(so);
            if (o.losses)
                s.lost.assign(static_cast<std::size_t>(s.geometry.stored_planes() * dataset_.dims.plane()), 0);
            streams_.push_back(std::move(s));
        }
        spdlog::info("replay: {} ({} steps of {}) into {} streams, speed {}, {}", o.recording, schedule_.size(),
                     to_string(dataset_.dims), slabs, o.speed,
                     o.losses ? "each step's recorded losses left out" : "every value sent");
    }

    int run(StatusReporter& status) {
        for (int lap = 0; lap < o_.loops && !stop_requested(); ++lap) {
            const std::int64_t start = monotonic_ns();
            for (const ReplayStep& r : schedule_) {
                if (stop_requested()) break;
                volume_.load(dataset_, *r.step, o_.losses);
                if (speed_ > 0 && !wait_until(start + r.offset_ns)) break;
                const std::int64_t sent_at = realtime_ns();
                const std::uint64_t values = send_step(r.step->number);
                ++steps_sent_;
                last_step_ = r.step->number;
                status.event({{"kind", "step"}, {"step", r.step->number}, {"result", "sent"},
                              {"started_ns", sent_at}, {"offset_ns", monotonic_ns() - start}, {"values", values}});
            }
        }
        return 0;
    }

    std::uint64_t steps_sent() const { return steps_sent_; }
    std::int64_t last_step() const { return last_step_; }

private:
    // Every stream's slab of the step in memory, a batch from each in turn.
    std::uint64_t send_step(int number) {
        const std::int64_t plane = dataset_.dims.plane();
        for (Stream& s : streams_) {
            const std::int64_t first = s.geometry.stored_z_begin * plane;
            const std::uint8_t* lost = nullptr;
            if (o_.losses) {
                const std::int64_t ghost = s.geometry.ghost_planes() * plane;
                std::memcpy(s.lost.data() + ghost, volume_.ages() + s.geometry.z_begin * plane,
                            static_cast<std::size_t>(s.geometry.owned_planes() * plane));
                lost = s.lost.data();
            }
            s.sender->begin_step(number, volume_.values() + first, lost);
        }
        std::uint64_t values = 0;
        for (bool more = true; more && !stop_requested();) {
            more = false;
            for (Stream& s : streams_)
                more |= s.sender->send_batch([] { return stop_requested(); }, [] {});
        }
        for (Stream& s : streams_) {
            values += s.sender->values_in_step();
            s.sender->end_step();
        }
        return values;
    }

    const ReplayOptions& o_;
    Dataset dataset_;
    double speed_;
    std::vector<ReplayStep> schedule_;
    StepVolume volume_;
    std::vector<Stream> streams_;
    std::atomic<std::uint64_t> steps_sent_{0};
    std::atomic<std::int64_t> last_step_{-1};
};

int run_replay(const ReplayOptions& o) {
    StatusReporter status("replay", o.stats_json);
    Replay replay(o);
    status.start([&] {
        return nlohmann::json{
            {"line", fmt::format("replay: {} steps sent, last {}", replay.steps_sent(), replay.last_step())},
            {"steps_sent", replay.steps_sent()}, {"last_step", replay.last_step()}};
    });
    const int rc = replay.run(status);
    status.stop();
    spdlog::info("replay: {} steps sent", replay.steps_sent());
    return rc;
}

}  // namespace

void register_replay(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<ReplayOptions>();
    CLI::App* c =
        root.add_subcommand("replay", "stream a recording (or any dataset) into receivers as it was recorded");
    c->add_option("recording", o->recording, "the recording's directory or its dataset.json")->required();
    c->add_option("--to", o->to, "each stream's receiver HOST:PORT, in slab order, or HOST:FIRST-LAST")->required();
    c->add_option("--speed", o->speed, "1: the recorded pace, 2: twice as fast, max: as fast as they go")
        ->capture_default_str();
    c->add_flag("--losses", o->losses, "leave out what each step lost when it was recorded (the same holes)");
    c->add_option("--slab-depth", o->slab_depth, "z planes per slab (default: the recorded stream's)")
        ->check(CLI::Range(1, 1 << 20));
    c->add_option("--ghost-planes", o->ghost_planes, "also send this many planes below each slab (0 or 1)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1));
    c->add_option("--rate", o->rate, "each stream's send rate of UDP payload, e.g. 2.81G; 0 = unlimited")
        ->capture_default_str();
    c->add_option("--wire", o->wire, "data packets: run or quad")->capture_default_str();
    c->add_option("--codec", o->codec, "run packets' codec, e.g. none, lz4, quant:10")->capture_default_str();
    c->add_option("--fec", o->fec, "forward error correction as for shuffle: K+M[/DEPTH], K+LOW-HIGH[/DEPTH], auto "
                                   "or none")
        ->check(parsed_by(fec::parse_choice, "K+M[/DEPTH]"))
        ->capture_default_str();
    c->add_option("--bind", o->bind, "local HOST[:PORT] to send from");
    c->add_option("--loops", o->loops, "times through the recording")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    c->add_option("--stats-json", o->stats_json, "append JSON lines (status every second, step reports)");
    c->callback([o, &run] { run = [o] { return run_replay(*o); }; });
}

}  // namespace slabcast
