// `slabcast control`: tells every shuffler (and the stager) which step to send
// next, with sync packets resent until each shuffler answers. Steps advance at
// a fixed interval, or as soon as every shuffler has finished the step.
#include "base/key_file.h"
#include "base/option_checks.h"
#include "base/roles.h"
#include "base/status_reporter.h"
#include "base/stop_signal.h"
#include "base/udp.h"

#include "slabcast/control_packets.h"
#include "slabcast/dataset.h"
#include "slabcast/clock.h"
#include "slabcast/units.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <climits>
#include <ctime>
#include <optional>
#include <random>
#include <set>

namespace slabcast {
namespace {

struct ControlOptions {
    std::string key_file;  // signs the syncs (empty: unauthenticated, with a warning)
    std::string dataset;
    std::vector<std::string> shufflers;
    std::vector<std::string> stagers;
    std::string bind = "0.0.0.0:0";
    double interval_s = 0;
    bool loop = false;
    std::string steps;
    long count = 0;
    double done_timeout_s = 30;
    std::string stats_json;
};

// "HOST:PORT" or "HOST:FIRST-LAST" (consecutive ports, one shuffler each).
std::vector<Endpoint> expand_endpoints(const std::vector<std::string>& texts) {
    std::vector<Endpoint> out;
    for (const auto& t : expand_port_ranges(texts)) out.push_back(parse_endpoint(t));
    return out;
}

// "0-9,12" -> those step numbers, each checked against the dataset (range by
// range: "0-2000000000" stops at the first step the dataset lacks).
std::vector<const DatasetStep*> select_steps(const Dataset& d, const std::string& text) {
    std::vector<const DatasetStep*> out;
    if (text.empty()) {
        for (const auto& s : d.steps) out.push_back(&s);
        return out;
    }
    for (const IndexRange& r : parse_index_ranges(text, INT_MAX - 1, "--steps"))
        for (int s = r.first; s <= r.last; ++s) {
            const DatasetStep* step = d.find_step(s);
            if (!step) throw std::invalid_argument("--steps: step " + std::to_string(s) + " is not in the dataset");
            out.push_back(step);
        }
    return out;
}

struct ControlCounters {
    std::atomic<std::int64_t> step{-1};
    std::atomic<long> steps_sent{0};
    std::atomic<int> started{0}, finished{0}, missing{0};
};

// The control host (Balman et al., 2012, section 4.3): one sync per step to
// every shuffler, resent until each answers, the next step when the interval
// is up or (interval 0) when every shuffler has finished.
class Controller {
public:
    explicit Controller(const ControlOptions& o)
        : o_(o), dataset_(read_dataset(o.dataset)), schedule_(select_steps(dataset_, o.steps)),
          shufflers_(expand_endpoints(o.shufflers)), stagers_(expand_endpoints(o.stagers)),
          silent_(shufflers_.size(), false), status_("control", o.stats_json) {
        if (shufflers_.empty()) throw std::invalid_argument("give at least one --shuffler HOST:PORT");
        for (const Endpoint& e : shufflers_) shuffler_names_.push_back(to_string(e.addr));
        open_socket();
        load_key();
    }

    int run() {
        start_status();
        spdlog::info("control: {} step(s) to {} shuffler(s){}, {}", schedule_.size(), shufflers_.size(),
                     stagers_.empty() ? "" : fmt::format(" and {} stager(s)", stagers_.size()),
                     o_.interval_s > 0 ? fmt::format("one every {} s", o_.interval_s) : "each as soon as all finish");
        for (std::size_t i = 0; !stop_requested(); ++i) {
            if (i == schedule_.size()) {
                if (!o_.loop) break;
                i = 0;
            }
            if (o_.count > 0 && sent_steps_ >= o_.count) break;
            const bool last = !o_.loop && (i + 1 == schedule_.size() || (o_.count > 0 && sent_steps_ + 1 >= o_.count));
            sync_step(*schedule_[i], last);
        }
        status_.stop();
        return 0;
    }

private:
    // What one step's sync has heard so far.
    struct StepProgress {
        std::set<std::size_t> started, done;  // shufflers, by index
        std::vector<std::string> outcomes;    // per shuffler: silent, finished, abandoned...
        std::int64_t t0 = 0, last_send = 0;
        int stager_copies = 0;
        std::vector<std::uint8_t> packet;
    };

    void open_socket() {
        const Endpoint bind = parse_endpoint(o_.bind);
        sock_ = Socket(open_udp_socket(bind.addr.ss_family));
        bind_socket(sock_.fd(), bind);
        set_receive_timeout(sock_.fd(), 20);
    }

    // The syncs are signed with the key, under a session number of this run's
    // own, so that shufflers tell a restarted controller from a replay.
    void load_key() {
        std::random_device rd;
        if (!o_.key_file.empty()) key_ = load_sync_key(o_.key_file);
        else spdlog::warn("control: syncs are not authenticated (no --key-file): shufflers started with one will drop them");
        session_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(monotonic_ns());
    }

    void start_status() {
        status_.start([this] {
            const int n = static_cast<int>(shufflers_.size());
            return nlohmann::json{
                {"line", fmt::format("control: step {}, {} steps synced, {}/{} shufflers started, {}/{} finished{}",
                                     c_.step.load(), c_.steps_sent.load(), c_.started.load(), n, c_.finished.load(), n,
                                     c_.missing ? fmt::format(", {} MISSING at the last step", c_.missing.load()) : "")},
                {"missing", c_.missing.load()},
                {"step", c_.step.load()}, {"steps_sent", c_.steps_sent.load()}, {"started", c_.started.load()},
                {"finished", c_.finished.load()}, {"shufflers", n}};
        });
    }

    // Syncs every shuffler (and the stagers) to `step` until the step is over.
    void sync_step(const DatasetStep& step, bool last) {
        control::Sync sync{session_, ++seq_, step.number, step.file};
        sync.time_ns = realtime_ns();
        StepProgress p;
        p.packet = control::encode(sync, key_ ? &*key_ : nullptr);
        p.outcomes.assign(shufflers_.size(), "silent");
        p.t0 = monotonic_ns();
        c_.step = step.number;
        c_.started = 0;
        c_.finished = 0;
        c_.steps_sent = ++sent_steps_;
        status_.event({{"kind", "sync"}, {"step", step.number}, {"seq", seq_}});  // its time: when the step was asked for
        for (;;) {
            resend(p);
            collect_reply(p);
            if (stop_requested() || step_over(p, step, last)) break;
        }
        report_step(p, step);
    }

    // (Re)sends the sync to every shuffler that has not answered, every 200 ms;
    // the stagers get it three times (they only free what the step left behind).
    void resend(StepProgress& p) {
        const std::int64_t now = monotonic_ns();
        if (now - p.last_send <= 200'000'000) return;
        auto send_to = [&](const Endpoint& e) {
            ::sendto(sock_.fd(), p.packet.data(), p.packet.size(), 0, reinterpret_cast<const sockaddr*>(&e.addr), e.length);
        };
        for (std::size_t k = 0; k < shufflers_.size(); ++k)
            if (!p.started.count(k)) send_to(shufflers_[k]);
        if (p.stager_copies++ < 3)
            for (const auto& e : stagers_) send_to(e);
        p.last_send = now;
    }

    // Waits up to the socket's 20 ms for one reply to this step's sync.
    void collect_reply(StepProgress& p) {
        std::uint8_t buf[256];
        sockaddr_storage from{};
        socklen_t from_len = sizeof from;
        const ssize_t n = ::recvfrom(sock_.fd(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n <= 0) return;
        const auto r = control::decode_reply(buf, static_cast<std::size_t>(n));
        if (!r || r->session != session_ || r->seq != seq_) return;
        const std::string sender = to_string(from);
        for (std::size_t k = 0; k < shufflers_.size(); ++k) {
            if (shuffler_names_[k] != sender) continue;
            p.started.insert(k);
            if (r->kind != control::ReplyKind::Started) {
                p.done.insert(k);
                p.outcomes[k] = control::to_string(r->kind);
            }
        }
        c_.started = static_cast<int>(p.started.size());
        c_.finished = static_cast<int>(p.done.size());
    }

    // A fixed interval moves on when it is up (after the last step, it waits
    // for the finish too); interval 0 moves on when all have finished, or
    // gives up on the silent ones after --done-timeout.
    bool step_over(const StepProgress& p, const DatasetStep& step, bool last) const {
        const double elapsed = static_cast<double>(monotonic_ns() - p.t0) * 1e-9;
        const bool all_done = p.done.size() == shufflers_.size();
        if (o_.interval_s > 0)
            return elapsed >= o_.interval_s && !(last && !all_done && elapsed < o_.done_timeout_s);
        if (all_done) return true;
        if (elapsed < o_.done_timeout_s) return false;
        std::string missing;
        for (std::size_t k = 0; k < shufflers_.size(); ++k)
            if (!p.done.count(k)) missing += " " + shufflers_[k].text + "(" + p.outcomes[k] + ")";
        spdlog::warn("control: step {}: no finish after {} s from:{}", step.number, o_.done_timeout_s, missing);
        return true;
    }

    // Logs the step and its outcome per shuffler. A shuffler that never
    // answered is down or cut off: said once, when it goes quiet, and again
    // when it answers again.
    void report_step(const StepProgress& p, const DatasetStep& step) {
        const double seconds = static_cast<double>(monotonic_ns() - p.t0) * 1e-9;
        spdlog::info("control: step {} ({}): {}/{} started, {}/{} done in {:.3f} s", step.number, step.file,
                     p.started.size(), shufflers_.size(), p.done.size(), shufflers_.size(), seconds);
        nlohmann::json missing = nlohmann::json::array();
        for (std::size_t k = 0; k < shufflers_.size() && !stop_requested(); ++k) {
            const bool quiet = !p.started.count(k);
            if (quiet) missing.push_back(shufflers_[k].text);
            if (quiet && !silent_[k])
                spdlog::warn("control: shuffler {} MISSING: no answer to step {} (down, or its path cut)",
                             shufflers_[k].text, step.number);
            if (!quiet && silent_[k]) spdlog::info("control: shuffler {} answers again", shufflers_[k].text);
            silent_[k] = quiet;
        }
        c_.missing = static_cast<int>(missing.size());
        status_.event({{"kind", "step"}, {"step", step.number}, {"seq", seq_}, {"started", p.started.size()},
                       {"done", p.done.size()}, {"seconds", seconds}, {"outcomes", p.outcomes},
                       {"missing", missing}});
    }

    const ControlOptions& o_;
    const Dataset dataset_;
    const std::vector<const DatasetStep*> schedule_;
    const std::vector<Endpoint> shufflers_, stagers_;
    std::vector<std::string> shuffler_names_;  // their addresses, which replies are matched against
    std::vector<bool> silent_;  // did not answer the last step at all
    Socket sock_;
    std::optional<control::SyncKey> key_;
    std::uint64_t session_ = 0;
    std::uint32_t seq_ = 0;
    long sent_steps_ = 0;
    ControlCounters c_;
    StatusReporter status_;
};

}  // namespace

void register_control(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<ControlOptions>();
    CLI::App* c = root.add_subcommand("control", "sync every shuffler (and stager) to the next step");
    c->add_option("--dataset", o->dataset, "dataset directory or its dataset.json")->required();
    c->add_option("--key-file", o->key_file, "authenticate the syncs with this key (slabcast keygen; same file on "
                                             "every shuffler and stager)");
    c->add_option("--shuffler", o->shufflers, "shuffler sync address HOST:PORT or HOST:FIRST-LAST")->required();
    c->add_option("--stager", o->stagers, "stager sync address HOST:PORT (so it frees steps left behind)");
    c->add_option("--bind", o->bind, "local address for sync packets and replies")->capture_default_str();
    c->add_option("--interval", o->interval_s, "seconds per step; 0 = next step as soon as all shufflers finish")
        ->check(seconds_range(0, 86400))
        ->capture_default_str();
    c->add_flag("--loop", o->loop, "start again after the last step, until stopped");
    c->add_option("--steps", o->steps, "steps to send, e.g. 0-9,12 (default: all, in order)");
    c->add_option("--count", o->count, "stop after this many steps (0 = no limit)")->check(CLI::Range(0L, 1000000000L));
    c->add_option("--done-timeout", o->done_timeout_s, "seconds to wait for shufflers to finish a step")
        ->check(seconds_range(0.1, 86400))
        ->capture_default_str();
    c->add_option("--stats-json", o->stats_json, "append JSON lines (status every second, step reports)");
    c->callback([o, &run] { run = [o] { return Controller(*o).run(); }; });
}

}  // namespace slabcast
