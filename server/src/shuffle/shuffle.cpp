// `slabcast shuffle`: one stream. Waits for sync packets; for each new one it
// maps the staged step, packs its slab into UDP packets on the fly (run
// packets, or the paper's quad packets with --wire quad) and sends them at the
// set rate. A newer sync abandons the step in progress at once
// (Balman et al., 2012, sections 4.2 and 4.3, figures 4 and 5).
#include "base/roles.h"
#include "base/host_checks.h"
#include "base/numa_placement.h"
#include "base/option_checks.h"
#include "shuffle/slab_sender.h"
#include "control/sync_gate.h"
#include "stage/staged_step.h"
#include "base/status_reporter.h"
#include "base/stop_signal.h"
#include "base/udp.h"

#include "slabcast/control_packets.h"
#include "slabcast/dataset.h"
#include "slabcast/run_codec.h"
#include "slabcast/units.h"
#include "slabcast/clock.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

namespace slabcast {
namespace {

struct ShuffleOptions {
    std::string key_file;    // authenticates syncs (empty: unauthenticated, with a warning)
    std::string controller;  // addresses syncs may come from (empty: any)
    int stream = -1;
    std::string to;
    std::string bind;  // local address of the data socket (empty: the kernel's choice)
    std::string staging;
    std::string dataset;
    int slab_depth = 0;
    std::string sync;
    std::string rate = "2.81G";
    std::string order = "scan";
    std::string wire = "run";  // run (4 bytes a value) or quad (the paper's packets, 16 bytes a value)
    std::string codec = "none";  // run packets' payload: none, lz4, zfp:RATE, quant:BITS
    int encode_threads = 1;
    std::string fec = "none";  // forward error correction: K+M[/DEPTH]
    int ghost_planes = 1;
    int sndbuf_mb = 16;
    int batch = 28;
    bool gso = true;
    int wait_staged_ms = 2000;
    std::string stats_json;
};

// What the status thread reads.
struct ShuffleCounters {
    std::atomic<std::uint64_t> bytes{0}, packets{0}, steps_finished{0}, steps_abandoned{0}, steps_missing{0};
    std::atomic<std::uint64_t> parity_packets{0}, parity_bytes{0};  // FEC's, in packets and bytes too
    std::atomic<int> fec_parity{0};                                  // parity datagrams a group now
    std::atomic<std::uint64_t> loss_reports{0};                      // the receiver's, taken
    std::atomic<std::int64_t> step{-1};
    std::atomic<std::uint64_t> step_packets{0}, step_total{1};
};

class Shuffler {
public:
    Shuffler(const ShuffleOptions& o, StatusReporter& status)
        : o_(o), status_(status), dataset_(read_dataset(o.dataset)),
          gate_(fmt::format("shuffle {}", o.stream), o.key_file, o.controller) {
        geometry_ = slab_geometry(dataset_.dims, o.slab_depth, o.stream, o.ghost_planes);
        SlabSenderOptions so;
        so.dims = dataset_.dims;
        so.z_begin = geometry_.stored_z_begin;
        so.z_end = geometry_.z_end;
        so.ghost_planes = geometry_.ghost_planes();
        so.slab = o.stream;
        so.order = parse_send_order(o.order);
        so.wire = parse_wire_format(o.wire);
        so.codec = run::parse_codec(o.codec);
        so.rate_bps = parse_rate_bps(o.rate);
        so.to = o.to;
        so.bind = o.bind;
        so.sndbuf_mb = o.sndbuf_mb;
        so.most_batch = o.batch;
        so.gso = o.gso;
        so.encode_threads = o.encode_threads;
        so.fec = fec::parse_choice(o.fec);
        so.who = fmt::format("shuffle {}", o.stream);
        sender_.emplace(so);
        // Parts packed side by side read the slab in several places at once.
        scan_ = so.order == SendOrder::Scan && sender_->encode_threads() == 1;

        const Endpoint sync = parse_endpoint(o.sync);
        sync_ = Socket(open_udp_socket(sync.addr.ss_family));
        bind_socket(sync_.fd(), sync);
        set_receive_timeout(sync_.fd(), 100);

        warn_limits(fmt::format("shuffle {}", o.stream), {check_staging_pages(o.staging)});
        sockaddr_storage local{};
        socklen_t local_len = sizeof local;
        if (::getsockname(sender_->fd(), reinterpret_cast<sockaddr*>(&local), &local_len) == 0) {
            const std::string nic = interface_of_address(address_only(local));
            if (!nic.empty() && nic != "lo") warn_limits(fmt::format("shuffle {}", o.stream), {check_mtu(nic)});
        }
        spdlog::info("shuffle {}: planes {}..{} of {} ({} records, {}{} {} packets a step{}{}), {} order, {} to {}, "
                     "sync on {}{}",
                     o.stream, geometry_.stored_z_begin, geometry_.z_end - 1, to_string(dataset_.dims),
                     sender_->total_values(), sender_->fixed_packet_bytes() ? "" : "at most ",
                     sender_->total_packets(), o.wire, so.wire == WireFormat::Run ? ", codec " + o.codec : "",
                     so.fec.on() ? ", FEC " + fec::to_string(so.fec) : "", o.order, format_rate(so.rate_bps), o.to, o.sync,
                     sender_->encode_threads() > 1 ? fmt::format(", packed on {} threads", sender_->encode_threads())
                                                   : "");
    }

    ShuffleCounters& counters() { return counters_; }

    void run() {
        while (!stop_requested()) {
            if (!step_) {
                poll_sync(true);
                continue;
            }
            send_batch();
            poll_sync(false);
        }
        if (step_) end_step(control::ReplyKind::Abandoned);
    }

private:
    // Reads every pending sync packet (`block`: waits up to the socket timeout
    // for one), then starts the newest new step only. Starting each in turn
    // would, behind a controller that stepped faster than this host kept up
    // (a loaded machine), wait out --wait-staged-ms for each old step's file,
    // which the stager has already freed, and never catch up.
    void poll_sync(bool block) {
        std::uint8_t buf[2048];
        std::optional<control::Sync> newest;
        for (;;) {
            sockaddr_storage from{};
            socklen_t from_len = sizeof from;
            const ssize_t n = ::recvfrom(sync_.fd(), buf, sizeof buf, block ? 0 : MSG_DONTWAIT,
                                         reinterpret_cast<sockaddr*>(&from), &from_len);
            if (n < 0) break;
            block = false;
            control::Sync sync;
            const SyncGate::Verdict verdict = gate_.admit(buf, static_cast<std::size_t>(n), from, sync);
            if (verdict == SyncGate::Verdict::Dropped) continue;
            controller_ = from;
            controller_len_ = from_len;
            if (verdict == SyncGate::Verdict::Repeat) {
                // The controller resends until it hears from us: answer again
                // (a sync read just now is answered when its step starts).
                if (!newest) reply(step_ ? control::ReplyKind::Started : last_outcome_, sync, sender_->packets_in_step());
                continue;
            }
            if (newest) spdlog::debug("shuffle {}: step {} passed over for step {}", o_.stream, newest->step, sync.step);
            newest = sync;
        }
        if (!newest) return;
        if (step_) end_step(control::ReplyKind::Abandoned);
        last_sync_ = *newest;
        begin_step(*newest);
    }

    void begin_step(const control::Sync& sync) {
        const std::string path = o_.staging + "/" + sync.location;
        std::string problem;
        const StagedStep* staged = nullptr;
        // The stager may be a moment behind the controller: wait a little for the file.
        const std::int64_t give_up = monotonic_ns() + static_cast<std::int64_t>(o_.wait_staged_ms) * 1'000'000;
        for (;;) {
            problem.clear();
            staged = staged_.hold(path, dataset_.step_bytes(), problem);
            if (staged || monotonic_ns() > give_up || stop_requested()) break;
            ::usleep(1000);
        }
        if (!staged) {
            spdlog::error("shuffle {}: step {} skipped: {}", o_.stream, sync.step, problem);
            ++counters_.steps_missing;
            last_outcome_ = control::ReplyKind::Missing;
            reply(control::ReplyKind::Missing, sync, 0);
            status_.event({{"kind", "step"}, {"stream", o_.stream}, {"step", sync.step}, {"result", "missing"},
                           {"problem", problem}});
            return;
        }
        step_ = staged;
        prefaulted_to_ = std::max(slab_begin_bytes(), staged->prefaulted_end());
        sender_->begin_step(sync.step, step_->values() + slab_begin_bytes() / sizeof(float));
        prefault_ahead();
        step_started_ns_ = monotonic_ns();
        counters_.step = sync.step;
        counters_.step_packets = 0;
        counters_.step_total = sender_->total_packets();
        reply(control::ReplyKind::Started, sync, 0);
        spdlog::debug("shuffle {}: step {} from {}", o_.stream, sync.step, path);
    }

    void end_step(control::ReplyKind outcome) {
        const control::Sync& sync = *last_sync_;
        const std::uint64_t sent = sender_->packets_in_step(), total = sender_->total_packets();
        const std::uint64_t bytes = sender_->bytes_in_step();
        sender_->end_step();  // nothing of the staged step is read after this
        step_ = nullptr;
        staged_.release();  // the stager may rewrite its slot
        last_outcome_ = outcome;
        write_done_marker(o_.staging, sync.location, o_.stream);
        reply(outcome, sync, sent);
        const double seconds = static_cast<double>(monotonic_ns() - step_started_ns_) * 1e-9;
        const double gbps = static_cast<double>(bytes) * 8e-9 / std::max(seconds, 1e-9);
        if (outcome == control::ReplyKind::Finished) ++counters_.steps_finished;
        else ++counters_.steps_abandoned;
        spdlog::info("shuffle {}: step {} {} after {} of {} packets, {:.3f} s, {:.2f} Gbit/s", o_.stream, sync.step,
                     control::to_string(outcome), sent, total, seconds, gbps);
        status_.event({{"kind", "step"}, {"stream", o_.stream}, {"step", sync.step},
                       {"result", control::to_string(outcome)}, {"packets_sent", sent},
                       {"packets_total", total}, {"seconds", seconds}, {"gbps", gbps}});
    }

    std::size_t slab_begin_bytes() const {
        return static_cast<std::size_t>(geometry_.stored_z_begin) * static_cast<std::size_t>(dataset_.dims.plane()) *
               sizeof(float);
    }
    std::size_t slab_end_bytes() const {
        return static_cast<std::size_t>(geometry_.z_end) * static_cast<std::size_t>(dataset_.dims.plane()) *
               sizeof(float);
    }

    // Maps the staged pages a little ahead of the packets being built: faulting
    // them one by one costs more than building the packets, and mapping a whole
    // slab up front stalls the stream between steps (64 MiB: several ms).
    // Scan order reads the slab front to back; other orders get it all at once.
    void prefault_ahead() {
        constexpr std::size_t kAhead = 8 << 20;
        const std::size_t slab_end = slab_end_bytes();
        const std::size_t reading = slab_begin_bytes() + sender_->values_in_step() * sizeof(float);
        if (prefaulted_to_ >= slab_end || (scan_ && prefaulted_to_ > reading + kAhead / 2)) return;
        const std::size_t to = scan_ ? std::min(slab_end, reading + kAhead) : slab_end;
        step_->prefault(prefaulted_to_, to - prefaulted_to_);
        prefaulted_to_ = to;
    }

    void send_batch() {
        prefault_ahead();
        const std::uint64_t packets = sender_->packets_in_step(), bytes = sender_->bytes_in_step();
        const bool sent = sender_->send_batch([] { return stop_requested(); }, [&] {
            if (!warned_refused_) spdlog::warn("shuffle {}: receiver {} refused packets (not running?)", o_.stream, o_.to);
            warned_refused_ = true;
        });
        // (A step's last call sends no packets but FEC's last parity.)
        counters_.packets += sender_->packets_in_step() - packets;
        counters_.bytes += sender_->bytes_in_step() - bytes;
        counters_.step_packets = sender_->packets_in_step();
        counters_.parity_packets = sender_->parity_packets();
        counters_.parity_bytes = sender_->parity_bytes();
        counters_.fec_parity = sender_->fec_parity();
        counters_.loss_reports = sender_->loss_reports();
        if (!sent) end_step(control::ReplyKind::Finished);
    }

    void reply(control::ReplyKind kind, const control::Sync& sync, std::uint64_t sent) {
        if (controller_len_ == 0) return;
        control::Reply r;
        r.kind = kind;
        r.stream = o_.stream;
        r.session = sync.session;
        r.seq = sync.seq;
        r.step = sync.step;
        r.packets_sent = sent;
        r.packets_total = sender_->total_packets();
        const auto bytes = control::encode(r);
        ::sendto(sync_.fd(), bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&controller_),
                 controller_len_);
    }

    const ShuffleOptions& o_;
    StatusReporter& status_;
    Dataset dataset_;
    SlabGeometry geometry_;
    std::optional<SlabSender> sender_;  // packs, paces and sends the slab
    bool scan_ = true;                  // scan order: the staged step is read front to back
    std::size_t prefaulted_to_ = 0;     // staged bytes mapped so far
    Socket sync_;
    StagedSteps staged_;                // the staging slots, each mapped once
    const StagedStep* step_ = nullptr;  // the one being sent, held
    SyncGate gate_;
    std::optional<control::Sync> last_sync_;
    control::ReplyKind last_outcome_ = control::ReplyKind::Finished;
    sockaddr_storage controller_{};
    socklen_t controller_len_ = 0;
    std::int64_t step_started_ns_ = 0;
    bool warned_refused_ = false;
    ShuffleCounters counters_;
};

int run_shuffle(const ShuffleOptions& o) {
    StatusReporter status("shuffle", o.stats_json);
    Shuffler shuffler(o, status);
    ShuffleCounters& c = shuffler.counters();
    RateMeter meter;
    meter.gbit_per_s(0);
    status.start([&, stream = o.stream] {
        const double gbps = meter.gbit_per_s(c.bytes.load());
        const double progress = static_cast<double>(c.step_packets.load()) / static_cast<double>(c.step_total.load());
        return nlohmann::json{
            {"line", fmt::format("shuffle {}: {:.2f} Gbit/s, {} packets, step {} ({:.0f}% sent), {} finished, "
                                 "{} abandoned, {} missing",
                                 stream, gbps, c.packets.load(), c.step.load(), 100 * progress,
                                 c.steps_finished.load(), c.steps_abandoned.load(), c.steps_missing.load())},
            {"stream", stream}, {"gbps", gbps}, {"packets", c.packets.load()}, {"step", c.step.load()},
            {"progress", progress}, {"steps_finished", c.steps_finished.load()},
            {"steps_abandoned", c.steps_abandoned.load()}, {"steps_missing", c.steps_missing.load()},
            {"bytes", c.bytes.load()}, {"parity_packets", c.parity_packets.load()},
            {"parity_bytes", c.parity_bytes.load()}, {"fec_parity", c.fec_parity.load()},
            {"loss_reports", c.loss_reports.load()}};
    });
    shuffler.run();
    status.stop();
    return 0;
}

}  // namespace

void register_shuffle(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<ShuffleOptions>();
    CLI::App* c = root.add_subcommand("shuffle", "send one stream's slab of each synced step as UDP packets (run or quad)");
    c->add_option("--stream", o->stream, "stream (slab) number")->required()->check(CLI::Range(std::int64_t{0}, kMaxAxis - 1));
    c->add_option("--to", o->to, "receiver HOST:PORT for this stream")->required();
    c->add_option("--bind", o->bind, "local HOST[:PORT] to send the data from (default: the route's address)");
    c->add_option("--staging", o->staging, "staging directory (as given to stage)")->required();
    c->add_option("--dataset", o->dataset, "dataset directory or its dataset.json")->required();
    c->add_option("--slab-depth", o->slab_depth, "z planes per slab")
        ->required()
        ->check(CLI::Range(std::int64_t{1}, kMaxAxis));
    c->add_option("--sync", o->sync, "HOST:PORT to listen on for sync packets")->required();
    c->add_option("--key-file", o->key_file, "accept only syncs authenticated with this key (slabcast keygen)");
    c->add_option("--controller", o->controller, "accept syncs only from these addresses/CIDRs, e.g. 10.0.0.5");
    c->add_option("--rate", o->rate, "send rate of UDP payload, e.g. 2.81G; 0 = unlimited")->capture_default_str();
    c->add_option("--order", o->order,
                     "scan (z-slab scan order), morton (z-order) or progressive (coarse first: a step cut short "
                     "still covers the slab)")->capture_default_str();
    c->add_option("--wire", o->wire,
                  "data packets: run (a run of values, 4 bytes each) or quad (the paper's packets, 16 bytes a "
                  "value, for receivers older than run packets)")
        ->check(CLI::IsMember({"quad", "run"}))
        ->capture_default_str();
    c->add_option("--codec", o->codec,
                  "run packets' payload: none (raw float32), lz4 (lossless, byte-shuffled LZ4), zfp:RATE "
                  "(lossy ZFP fixed rate, RATE bits a value, 4..32) or quant:BITS (lossy and fast, 2^BITS levels "
                  "over each packet's range, 4..16); each packet decodes alone")
        ->check([](const std::string& text) {
            try {
                run::parse_codec(text);
                return std::string();
            } catch (const std::invalid_argument& e) {
                return std::string(e.what());
            }
        })
        ->capture_default_str();
    c->add_option("--encode-threads", o->encode_threads,
                  "threads packing the stream's packets, each a part of the slab: for a codec that one core "
                  "cannot run at the path's rate, on a sender with 4 or more cores (not yet measured there; on a "
                  "2-core host, where they competed with the sending thread and the receiver, slower than 1); "
                  "1: the sending thread")
        ->check(CLI::Range(1, ParallelPacker::kMostThreads))
        ->capture_default_str();
    c->add_option("--fec", o->fec,
                  "forward error correction: K+M[/DEPTH] sends M parity datagrams for every K (a group), groups "
                  "interleaved DEPTH deep (default 4), so that the receiver rebuilds up to M lost datagrams a "
                  "group without a round trip; e.g. 200+22 for 5% random loss. K+LOW-HIGH[/DEPTH]: M follows the "
                  "loss the receiver reports, from HIGH at the start; auto: " + std::string(fec::kAuto) + "; none: off")
        ->check(parsed_by(fec::parse_choice, "K+M[/DEPTH]"))
        ->capture_default_str();
    c->add_option("--ghost-planes", o->ghost_planes, "also send this many planes below the slab (0 or 1)")
        ->check(CLI::Range(0, 1))
        ->capture_default_str();
    // The kernel books SO_SNDBUF in an int, doubled: 1024 MiB is as far as it goes.
    c->add_option("--sndbuf-mb", o->sndbuf_mb, "socket send buffer, MiB")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    c->add_option("--batch", o->batch, "most packets per sendmmsg call (fewer at low rates)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    c->add_option("--gso", o->gso, "UDP segmentation offload: one send carries 7 packets")->capture_default_str();
    c->add_option("--wait-staged-ms", o->wait_staged_ms, "how long to wait for a step the stager has not staged yet")
        ->check(CLI::Range(0, 3600000))
        ->capture_default_str();
    c->add_option("--stats-json", o->stats_json, "append JSON lines (status every second, step reports)");
    c->callback([o, &run] { run = [o] { return run_shuffle(*o); }; });
}

}  // namespace slabcast
