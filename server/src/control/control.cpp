// `slabcast control`: tells every shuffler (and the stager) which step to send
// next, with sync packets resent until each shuffler answers. Steps advance at
// a fixed interval, or as soon as every shuffler has finished the step.
#include "host/key_file.h"
#include "host/option_checks.h"
#include "host/roles.h"
#include "host/status_reporter.h"
#include "host/stop_signal.h"
#include "host/udp.h"

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
    for (const auto& t : texts) {
        const auto colon = t.rfind(':');
        const auto dash = t.find('-', colon == std::string::npos ? 0 : colon);
        if (colon != std::string::npos && dash != std::string::npos) {
            const IndexRange ports = parse_index_range(t.substr(colon + 1), 65535, "address '" + t + "': ports");
            if (ports.last - ports.first > 4096) throw std::invalid_argument("address '" + t + "': bad port range");
            for (int p = ports.first; p <= ports.last; ++p)
                out.push_back(parse_endpoint(t.substr(0, colon + 1) + std::to_string(p)));
        } else {
            out.push_back(parse_endpoint(t));
        }
    }
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

int run_control(const ControlOptions& o) {
    const Dataset dataset = read_dataset(o.dataset);
    const auto schedule = select_steps(dataset, o.steps);
    const auto shufflers = expand_endpoints(o.shufflers);
    const auto stagers = expand_endpoints(o.stagers);
    if (shufflers.empty()) throw std::invalid_argument("give at least one --shuffler HOST:PORT");

    const Endpoint bind = parse_endpoint(o.bind);
    Socket sock(open_udp_socket(bind.addr.ss_family));
    bind_socket(sock.fd(), bind);
    set_receive_timeout(sock.fd(), 20);

    std::random_device rd;
    std::optional<control::SyncKey> key;
    if (!o.key_file.empty()) key = load_sync_key(o.key_file);
    else spdlog::warn("control: syncs are not authenticated (no --key-file): shufflers started with one will drop them");
    const std::uint64_t session = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(monotonic_ns());
    std::uint32_t seq = 0;

    StatusReporter status("control", o.stats_json);
    ControlCounters c;
    const int n_shufflers = static_cast<int>(shufflers.size());
    status.start([&] {
        return nlohmann::json{
            {"line", fmt::format("control: step {}, {} steps synced, {}/{} shufflers started, {}/{} finished{}",
                                 c.step.load(), c.steps_sent.load(), c.started.load(), n_shufflers, c.finished.load(),
                                 n_shufflers,
                                 c.missing ? fmt::format(", {} MISSING at the last step", c.missing.load()) : "")},
            {"missing", c.missing.load()},
            {"step", c.step.load()}, {"steps_sent", c.steps_sent.load()}, {"started", c.started.load()},
            {"finished", c.finished.load()}, {"shufflers", n_shufflers}};
    });
    spdlog::info("control: {} step(s) to {} shuffler(s){}, {}", schedule.size(), shufflers.size(),
                 stagers.empty() ? "" : fmt::format(" and {} stager(s)", stagers.size()),
                 o.interval_s > 0 ? fmt::format("one every {} s", o.interval_s) : "each as soon as all finish");

    long sent_steps = 0;
    std::vector<bool> silent(shufflers.size(), false);  // did not answer the last step at all
    for (std::size_t i = 0; !stop_requested(); ++i) {
        if (i == schedule.size()) {
            if (!o.loop) break;
            i = 0;
        }
        if (o.count > 0 && sent_steps >= o.count) break;
        const DatasetStep& step = *schedule[i];
        control::Sync sync{session, ++seq, step.number, step.file};
        sync.time_ns = realtime_ns();
        const auto packet = control::encode(sync, key ? &*key : nullptr);
        auto send_to = [&](const Endpoint& e) {
            ::sendto(sock.fd(), packet.data(), packet.size(), 0, reinterpret_cast<const sockaddr*>(&e.addr), e.length);
        };
        std::set<std::size_t> started, done;
        std::vector<std::string> outcomes(shufflers.size(), "silent");
        const std::int64_t t0 = monotonic_ns();
        std::int64_t last_send = 0;
        c.step = step.number;
        c.started = 0;
        c.finished = 0;
        ++sent_steps;
        c.steps_sent = sent_steps;
        int stager_copies = 0;
        status.event({{"kind", "sync"}, {"step", step.number}, {"seq", seq}});  // its time: when the step was asked for
        for (;;) {
            const std::int64_t now = monotonic_ns();
            if (now - last_send > 200'000'000) {  // (re)send to whoever has not answered
                for (std::size_t k = 0; k < shufflers.size(); ++k)
                    if (!started.count(k)) send_to(shufflers[k]);
                if (stager_copies++ < 3)
                    for (const auto& e : stagers) send_to(e);
                last_send = now;
            }
            std::uint8_t buf[256];
            sockaddr_storage from{};
            socklen_t from_len = sizeof from;
            const ssize_t n = ::recvfrom(sock.fd(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
            if (n > 0) {
                const auto r = control::decode_reply(buf, static_cast<std::size_t>(n));
                if (r && r->session == session && r->seq == seq) {
                    for (std::size_t k = 0; k < shufflers.size(); ++k) {
                        if (to_string(shufflers[k].addr) != to_string(from)) continue;
                        started.insert(k);
                        if (r->kind != control::ReplyKind::Started) {
                            done.insert(k);
                            outcomes[k] = control::to_string(r->kind);
                        }
                    }
                    c.started = static_cast<int>(started.size());
                    c.finished = static_cast<int>(done.size());
                }
            }
            const double elapsed = static_cast<double>(monotonic_ns() - t0) * 1e-9;
            if (stop_requested()) break;
            const bool last = !o.loop && (i + 1 == schedule.size() || (o.count > 0 && sent_steps >= o.count));
            // Fixed interval: move on when it is up (after the last step, wait for the finish too).
            if (o.interval_s > 0 && elapsed >= o.interval_s && !(last && done.size() < shufflers.size() &&
                                                                 elapsed < o.done_timeout_s))
                break;
            if (o.interval_s == 0 && done.size() == shufflers.size()) break;
            if (o.interval_s == 0 && elapsed >= o.done_timeout_s) {
                std::string missing;
                for (std::size_t k = 0; k < shufflers.size(); ++k)
                    if (!done.count(k)) missing += " " + shufflers[k].text + "(" + outcomes[k] + ")";
                spdlog::warn("control: step {}: no finish after {} s from:{}", step.number, o.done_timeout_s, missing);
                break;
            }
        }
        const double seconds = static_cast<double>(monotonic_ns() - t0) * 1e-9;
        spdlog::info("control: step {} ({}): {}/{} started, {}/{} done in {:.3f} s", step.number, step.file,
                     started.size(), shufflers.size(), done.size(), shufflers.size(), seconds);
        // A shuffler that never answered is down or cut off: said once, when it
        // goes quiet, and again when it answers again.
        nlohmann::json missing = nlohmann::json::array();
        for (std::size_t k = 0; k < shufflers.size() && !stop_requested(); ++k) {
            const bool quiet = !started.count(k);
            if (quiet) missing.push_back(shufflers[k].text);
            if (quiet && !silent[k])
                spdlog::warn("control: shuffler {} MISSING: no answer to step {} (down, or its path cut)",
                             shufflers[k].text, step.number);
            if (!quiet && silent[k]) spdlog::info("control: shuffler {} answers again", shufflers[k].text);
            silent[k] = quiet;
        }
        c.missing = static_cast<int>(missing.size());
        nlohmann::json per = nlohmann::json::array();
        for (std::size_t k = 0; k < shufflers.size(); ++k) per.push_back(outcomes[k]);
        status.event({{"kind", "step"}, {"step", step.number}, {"seq", seq}, {"started", started.size()},
                      {"done", done.size()}, {"seconds", seconds}, {"outcomes", per},
                      {"missing", missing}});
    }
    status.stop();
    return 0;
}

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
    c->callback([o, &run] { run = [o] { return run_control(*o); }; });
}

}  // namespace slabcast
