// `slabcast receive`: the receiver daemon (Balman et al., 2012, section 4.2).
// One thread per stream, pinned to a CPU, its slab in shared memory allocated
// and pre-faulted on that CPU's NUMA node; each thread drains its UDP port
// with recvmmsg and places every value at its offset. Writes NAME.slabcast for
// the ParaView reader.
#include "base/host_checks.h"
#include "base/numa_placement.h"
#include "base/option_checks.h"
#include "base/roles.h"
#include "base/status_reporter.h"
#include "base/stop_signal.h"
#include "base/udp.h"
#include "receive/pin_watch.h"
#include "receive/receive_options.h"
#include "receive/receive_stream.h"
#include "receive/stream_allowlist.h"
#include "receive/slab_directory.h"
#include "receive/stream_watch.h"

#include "slabcast/clock.h"
#include "slabcast/descriptor.h"
#include "slabcast/publication.h"
#include "slabcast/slab_file.h"
#include "slabcast/units.h"

#include <spdlog/spdlog.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace slabcast {
namespace {


std::string listen_address(const std::string& listen) {
    std::string a = listen;
    if (a.size() > 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
    return a;
}

class Receiver {
public:
    explicit Receiver(const ReceiveOptions& o)
        : o_(o), dims_(parse_dims(o.dims_text)), fill_(parse_fill_rule(o.fill)), status_("receive", o.stats_json) {
        if (o.name.empty() || o.name.find('/') != std::string::npos)
            throw std::invalid_argument("--name '" + o.name + "' must be a plain name");
        const bool bare_v6 = o.listen.find(':') != std::string::npos && o.listen.front() != '[';
        listen_ = parse_endpoint(bare_v6 ? "[" + o.listen + "]:0" : o.listen + ":0");
        const std::string address = listen_address(o.listen);
        const std::string nic = o.interface.empty() ? interface_of_address(address) : o.interface;
        cpus_ = choose_stream_cpus(o.cpus, nic, address);
        warn_host_limits(nic);
        add_streams();
        apply_allowlist(o.allow, by_slab_);
        prepare_directory();
    }

    int run() {
        allocate_slabs();
        publish_descriptor();
        for (auto& s : streams_) s->thread = std::thread(receive_loop, std::ref(*s), o_.batch, o_.gro && gro_ok_, o_.land);
        start_status();
        for (auto& s : streams_) s->thread.join();
        return stop();
    }

private:
    void warn_host_limits(const std::string& nic) {
        std::vector<HostFinding> limits{check_sysctl(kBacklogSysctl), check_irqbalance(), check_governor()};
        if (!nic.empty() && nic != "lo") limits.push_back(check_mtu(nic));
        warn_limits("receive", limits);
    }

    // One Stream per --stream, each slab and port once; the descriptor of
    // this receiver's own slabs.
    void add_streams() {
        std::set<int> ports;
        for (const auto& text : o_.streams) {
            auto s = std::make_unique<Stream>();
            s->spec = parse_stream(text);
            slab_geometry(dims_, o_.slab_depth, s->spec.slab, o_.ghost_planes);  // validates the index
            if (by_slab_.count(s->spec.slab)) throw std::invalid_argument("--stream: slab " + text + " given twice");
            if (!ports.insert(s->spec.port).second) throw std::invalid_argument("--stream: port in " + text + " already used");
            by_slab_[s->spec.slab] = s.get();
            streams_.push_back(std::move(s));
        }
        if (streams_.empty()) throw std::invalid_argument("give at least one --stream SLAB:PORT");
        mine_.name = o_.name;
        mine_.field = o_.field;
        mine_.dims = dims_;
        mine_.slab_depth = o_.slab_depth;
        mine_.ghost_planes = o_.ghost_planes;
        for (const auto& s : streams_) mine_.slabs.push_back(SlabEntry{s->spec.slab, slab_file_name(o_.name, s->spec.slab)});
    }

    void prepare_directory() {
        if (::mkdir(o_.shm_dir.c_str(), 0750) != 0 && errno != EEXIST)
            throw std::runtime_error(o_.shm_dir + ": cannot create: " + std::strerror(errno));
        require_own_directory(o_.shm_dir);
    }

    // Allocate, place and pre-fault every slab, and open every socket, before
    // any data can arrive.
    void allocate_slabs() {
        require_room_for_slabs(o_.shm_dir, mine_, o_.buffers);
        state_memory();
        for (std::size_t i = 0; i < streams_.size(); ++i) open_stream(*streams_[i], cpus_[i % cpus_.size()]);
        // Seamless slabs: the top plane of slab k is also slab k+1's ghost
        // plane, handed over when slab k publishes a step (for senders that
        // send owned planes only).
        if (o_.ghost_planes == 1)
            for (auto& [slab, s] : by_slab_)
                if (auto next = by_slab_.find(slab + 1); next != by_slab_.end()) {
                    s->receiver->hand_top_plane_to(&next->second->receiver->ghost_handoff());
                    next->second->receiver->expect_ghost_handoff();
                }
    }

    // What the slabs take: K value buffers and K age buffers each (a reader
    // shows one step while the next is written; docs/shared-memory.md).
    void state_memory() const {
        std::uint64_t total = 0, largest = 0;
        for (const auto& s : streams_) {
            const SlabGeometry g = slab_geometry(dims_, o_.slab_depth, s->spec.slab, o_.ghost_planes);
            SlabLayout layout;
            slab_layout(static_cast<std::uint64_t>(dims_.plane()) * static_cast<std::uint64_t>(g.stored_planes()),
                        o_.buffers, layout);
            total += layout.file_bytes;
            largest = std::max(largest, layout.file_bytes);
        }
        spdlog::info("receive: {} buffers per slab (one shown, one written, the rest for readers still holding "
                     "a step): {} per slab, {} for {} slab(s) in {}",
                     o_.buffers, format_bytes(largest), format_bytes(total), streams_.size(), o_.shm_dir);
    }

    void open_stream(Stream& s, int cpu) {
        s.cpu = cpu;
        s.node = numa_node_of(s.cpu);
        const SlabGeometry g = slab_geometry(dims_, o_.slab_depth, s.spec.slab, o_.ghost_planes);
        const std::string path = slab_file_path(o_.shm_dir, o_.name, s.spec.slab);
        s.slab = SlabMapping::create(path, dims_, o_.slab_depth, g, o_.field, o_.buffers);
        // Every value and age buffer, all past the header page.
        const std::uint64_t buffer_bytes = s.slab.layout().file_bytes - kSlabHeaderBytes;
        try {
            bind_and_prefault(s.slab.values_rw(0), buffer_bytes, s.node, s.slab.fd(), kSlabHeaderBytes);
        } catch (const std::exception& e) {
            throw std::runtime_error(path + ": " + format_bytes(buffer_bytes) + " of buffers: " + e.what() + "; " +
                                     o_.shm_dir + " has " + format_bytes(free_bytes(o_.shm_dir)) + " free");
        }
        s.socket = Socket(open_udp_socket(listen_.addr.ss_family));
        raise_buffer(s.socket.fd(), true, o_.rcvbuf_mb << 20, "receive");
        set_receive_timeout(s.socket.fd(), 100);
        if (o_.gro && !enable_gro(s.socket.fd())) {
            spdlog::warn("receive: UDP GRO unavailable here; receiving one datagram per call slot");
            gro_ok_ = false;
        }
        bind_socket(s.socket.fd(), with_port(listen_, s.spec.port));
        spdlog::info("stream {}: planes {}..{} (+{} ghost) on {}:{} -> {}, cpu {}, NUMA node {}", s.spec.slab,
                     g.z_begin, g.z_end - 1, g.ghost_planes(), o_.listen, s.spec.port, path, s.cpu, s.node);
        StreamCounters* counters = &s.counters;
        s.receiver = std::make_unique<SlabReceiver>(
            s.spec.slab, s.slab, [this, counters](const StepReport& r) { step_finished(*counters, r); },
            static_cast<std::int64_t>(o_.stale_window_ms) * 1'000'000,
            static_cast<std::int64_t>(o_.step_timeout_ms) * 1'000'000);
        s.receiver->set_fill(fill_);
        if (o_.fec_window > 0) s.fec = std::make_unique<fec::GroupReceiver>(o_.fec_window, fec::kMaxShards);
    }

    void step_finished(StreamCounters& counters, const StepReport& r) {
        if (r.dropped) {
            ++counters.steps_dropped;
            spdlog::warn("stream {} step {}: dropped, {} packets not written: {}", r.stream, r.step, r.packets,
                         r.dropped_because);
            status_.event({{"kind", "step_dropped"}, {"stream", r.stream}, {"step", r.step}, {"packets", r.packets},
                           {"reason", r.dropped_because}});
            return;
        }
        counters.finished_expected += r.expected;
        counters.finished_records += r.records;
        ++counters.steps_finished;
        spdlog::info("stream {} step {}: {} of {} records, loss {:.3f}%, {} duplicates, {} rejected, {} stale, "
                     "published in buffer {}{}{}",
                     r.stream, r.step, r.records, r.expected, r.loss_percent(), r.duplicates, r.rejected, r.stale,
                     r.buffer, r.complete ? "" : fmt::format(" ({} holes filled, {} from a coarser sample of the step)", r.holes, r.coarse_filled),
                     r.sent_ns ? fmt::format(", sent->begun {:.1f} ms, sent->published {:.1f} ms",
                                             1e-6 * static_cast<double>(r.begun_ns - r.sent_ns),
                                             1e-6 * static_cast<double>(r.published_ns - r.sent_ns))
                               : std::string());
        // On the stream's receiving thread, as its next step arrives: only when recorded.
        if (!status_.recording()) return;
        status_.event({{"kind", "step"},       {"stream", r.stream},       {"step", r.step},
                       {"records", r.records}, {"expected", r.expected},   {"ghost_records", r.ghost_records},
                       {"duplicates", r.duplicates}, {"rejected", r.rejected}, {"stale", r.stale},
                       {"packets", r.packets}, {"complete", r.complete},  {"loss_percent", r.loss_percent()},
                       {"holes", r.holes},     {"coarse_filled", r.coarse_filled}, {"buffer", r.buffer},
                       {"repaired", r.repaired},
                       {"pinned", r.pinned},   {"sent_ns", r.sent_ns}, {"begun_ns", r.begun_ns},
                       {"published_ns", r.published_ns}});
    }

    // NAME.slabcast lists this receiver's slabs and those of the others that
    // share it; the reader opens it once it is there.
    void publish_descriptor() {
        descriptor_path_ = descriptor_path(o_.shm_dir, o_.name);
        Descriptor all = mine_;
        merge_existing(o_.shm_dir, descriptor_path_, all);
        write_descriptor(descriptor_path_, all);
        spdlog::info("receive: {} stream(s) of {} ready; descriptor {}", streams_.size(), to_string(dims_),
                     descriptor_path_);
    }

    void start_status() {
        meter_.gbit_per_s(0);
        for (auto& s : streams_) s->meter.gbit_per_s(0);
        status_.start([this] { return snapshot(); });
    }

    // Once a second: the figures of every stream, summed and each, and the
    // streams that went quiet or came back.
    nlohmann::json snapshot() {
        std::uint64_t bytes = 0, packets = 0, rejected = 0, stale = 0, dups = 0, fexp = 0, frec = 0, foreign = 0,
                      dropped = 0, stamps = 0, repaired = 0, unrepaired = 0, parity = 0;
        nlohmann::json per_stream = nlohmann::json::array();
        std::int64_t step = -1;
        double progress = 0;
        std::vector<StreamWatch::Sample> samples;
        for (auto& s : streams_) {
            SlabLive& live = s->slab.header_rw().live;
            const std::uint64_t stream_bytes = s->counters.bytes.load();
            const double stream_gbps = s->meter.gbit_per_s(stream_bytes);
            // The same figures in the slab's header, for a monitor that sees
            // the slabs but not this process (the plugin's stream panel).
            live.bytes.store(stream_bytes, std::memory_order_relaxed);
            live.rate_bits_per_s.store(static_cast<std::uint64_t>(stream_gbps * 1e9), std::memory_order_relaxed);
            live.rate_ns.store(realtime_ns(), std::memory_order_relaxed);
            bytes += stream_bytes;
            packets += live.packets.load();
            rejected += live.rejected.load();
            stale += live.stale.load();
            stamps += live.stamps.load();
            repaired += live.fec_repaired.load();
            unrepaired += live.fec_unrepaired.load();
            parity += live.fec_parity.load();
            dups += live.duplicates.load();
            foreign += live.foreign.load();
            fexp += s->counters.finished_expected.load();
            frec += s->counters.finished_records.load();
            step = std::max<std::int64_t>(step, live.step.load());
            const double p = static_cast<double>(live.step_records.load()) / static_cast<double>(live.step_expected.load());
            progress += p / static_cast<double>(streams_.size());
            per_stream.push_back({{"stream", s->spec.slab}, {"gbps", stream_gbps}, {"bytes", stream_bytes},
                                  {"step", live.step.load()}, {"progress", p},
                                  {"packets", live.packets.load()}, {"foreign", live.foreign.load()},
                                  {"last_step", live.last_step.load()},
                                  {"last_step_loss_percent", live.last_step_loss_ppm.load() / 1e4},
                                  {"publications", live.publications.load()}, {"landed", s->counters.landed.load()},
                                  {"copied_out", s->counters.copied_out.load()}, {"dropped_steps", live.dropped_steps.load()},
                                  {"pinned", live.pinned.load()}, {"pinned_peak", live.pinned_peak.load()},
                                  {"fec", {{"data", live.fec_data.load()}, {"parity", live.fec_parity.load()},
                                           {"repaired", live.fec_repaired.load()},
                                           {"unrepaired", live.fec_unrepaired.load()},
                                           {"malformed", live.fec_malformed.load()},
                                           {"reports", s->counters.fec_reports.load()}}}});
            dropped += live.dropped_steps.load();
        }
        for (auto& s : streams_)
            samples.push_back({s->spec.slab, s->slab.header().live.packets.load(),
                               steps_begun(s->slab.header().live.generation.load())});
        report_watch(watch_.update(samples, monotonic_ns()));
        pins_.look(streams_, status_);
        const std::set<int>& missing = watch_.missing();
        const double gbps = meter_.gbit_per_s(bytes);
        const double loss = fexp ? 100.0 * static_cast<double>(fexp - frec) / static_cast<double>(fexp) : 0.0;
        return nlohmann::json{
            {"line", fmt::format("receive: {:.2f} Gbit/s, {} packets, loss {:.3f}%, step {} ({:.0f}% placed), "
                                 "rejected {}, stale {}, duplicates {}{}{}{}{}",
                                 gbps, packets, loss, step, 100 * progress, rejected, stale, dups,
                                 parity ? fmt::format(", FEC repaired {}, unrepaired {}", repaired, unrepaired)
                                        : std::string(),
                                 foreign ? fmt::format(", foreign {}", foreign) : std::string(),
                                 dropped ? fmt::format(", {} step(s) dropped (readers held every buffer)", dropped)
                                         : std::string(),
                                 missing.empty() ? std::string() : fmt::format(", MISSING streams {}", fmt::join(missing, ",")))},
            {"missing", missing}, {"gbps", gbps}, {"packets", packets}, {"loss_percent", loss}, {"step", step}, {"rejected", rejected},
            {"stale", stale}, {"stamps", stamps}, {"duplicates", dups}, {"foreign", foreign},
            {"fec_repaired", repaired}, {"fec_unrepaired", unrepaired},
            {"dropped_steps", dropped}, {"streams", per_stream}};
    }

    void report_watch(const StreamWatch::Changes& changes) {
        for (int k : changes.missing) {
            spdlog::warn("receive: stream {} missing: no packets for 2 s while the other streams began a new step "
                         "(its shuffler down, or its path cut)", k);
            status_.event({{"kind", "stream_missing"}, {"stream", k}});
        }
        for (int k : changes.back) {
            spdlog::info("receive: stream {} back: packets again", k);
            status_.event({{"kind", "stream_back"}, {"stream", k}});
        }
    }

    // After the threads: each slab's last step is accounted, and its writer
    // gone; the slabs stay (--keep) or go.
    int stop() {
        for (auto& s : streams_) s->receiver->finish_current();
        for (auto& s : streams_) s->slab.header_rw().live.writer_pid.store(0);
        status_.stop();
        if (o_.keep) {
            spdlog::info("receive: stopped; shared memory kept in {} (slabcast clean --name {} removes it)", o_.shm_dir,
                         o_.name);
            return 0;
        }
        streams_.clear();  // unmaps the slabs
        remove_own_slabs(o_.shm_dir, descriptor_path_, mine_);
        return 0;
    }

    const ReceiveOptions& o_;
    const Dims dims_;
    const FillRule fill_;
    Endpoint listen_;
    std::vector<int> cpus_;
    std::vector<std::unique_ptr<Stream>> streams_;
    std::map<int, Stream*> by_slab_;
    Descriptor mine_;  // this receiver's slabs only
    std::string descriptor_path_;
    bool gro_ok_ = true;
    RateMeter meter_;
    // Two seconds without a packet after the other streams moved on: longer
    // than any pause inside a step, short enough to be told while it matters.
    StreamWatch watch_{2'000'000'000};
    PinWatch pins_{o_.buffers};
    StatusReporter status_;
};

}  // namespace

int run_receive(const ReceiveOptions& o) { return Receiver(o).run(); }

}  // namespace slabcast
