// `slabcast receive`: the receiver daemon. One thread per stream, pinned to a
// CPU, its slab in shared memory allocated and pre-faulted on that CPU's NUMA
// node; each thread drains its UDP port with recvmmsg and places every value at
// its offset. Writes NAME.slabcast for the ParaView reader.
#include "host/address_filter.h"
#include "receive/batch_receiver.h"
#include "host/host_checks.h"
#include "host/numa_placement.h"
#include "host/roles.h"
#include "receive/slab_receiver.h"
#include "host/status_reporter.h"
#include "host/stop_signal.h"
#include "receive/stream_watch.h"
#include "host/udp.h"

#include "slabcast/descriptor.h"
#include "slabcast/quad_packet.h"
#include "slabcast/clock.h"
#include "slabcast/slab_file.h"
#include "slabcast/units.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <thread>

namespace slabcast {
namespace {

struct ReceiveOptions {
    std::string name;
    std::string dims_text;
    int slab_depth = 0;
    std::string listen;
    std::vector<std::string> streams;  // "K:PORT"
    std::string shm_dir = kDefaultShmDir;
    std::string field = "density";
    int ghost_planes = 1;
    std::string cpus;
    std::string interface;
    std::vector<std::string> allow;  // "CIDR,..." or "K=CIDR,..."
    bool keep = false;               // leave the slabs in place on a clean stop
    int rcvbuf_mb = 64;
    int batch = 64;
    int stale_window_ms = 250;
    bool gro = true;
    std::string stats_json;
};

struct StreamSpec {
    int slab = 0;
    int port = 0;
};

StreamSpec parse_stream(const std::string& text) {
    const auto colon = text.find(':');
    const auto slab = parse_whole(text.substr(0, colon), INT_MIN, INT_MAX);
    const auto port = colon == std::string::npos ? std::nullopt : parse_whole(text.substr(colon + 1), INT_MIN, INT_MAX);
    if (!slab || !port) throw std::invalid_argument("--stream '" + text + "': expected SLAB:PORT, e.g. 0:9000");
    if (*port < 1 || *port > 65535) throw std::invalid_argument("--stream '" + text + "': port must be 1..65535");
    return {static_cast<int>(*slab), static_cast<int>(*port)};
}

// Figures a stream thread shares with the status thread.
struct StreamCounters {
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<std::uint64_t> finished_expected{0};
    std::atomic<std::uint64_t> finished_records{0};
    std::atomic<std::uint64_t> steps_finished{0};
};

struct Stream {
    StreamSpec spec;
    int cpu = 0;
    int node = -1;
    SlabMapping slab;
    Socket socket;
    std::unique_ptr<SlabReceiver> receiver;
    StreamCounters counters;
    AddressFilter allowed;  // senders this stream takes data from; empty: any
    std::thread thread;
};

std::string listen_address(const std::string& listen) {
    std::string a = listen;
    if (a.size() > 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
    return a;
}

// --cpus, else the CPUs of the NUMA node of the NIC that carries the listen
// address (Balman et al., 2012, section 4.5: receiver and memory on the NIC's node), else
// every allowed CPU. Says which and why, since placement makes or breaks line rate.
std::vector<int> choose_cpus(const ReceiveOptions& o, const std::string& nic, const std::string& address) {
    if (!o.cpus.empty()) return parse_index_list(o.cpus, CPU_SETSIZE - 1, "--cpus");
    const int node = numa_node_of_interface(nic);
    const std::vector<int> local = allowed_cpus_of_node(node);
    if (!local.empty()) {
        spdlog::info("receive: NIC {} is on NUMA node {}: stream threads and slabs there", nic, node);
        return local;
    }
    spdlog::info("receive: NIC {} has no NUMA node ({}): stream threads on every allowed CPU",
                 nic.empty() ? "?" : nic, nic.empty() ? "no interface holds " + address : "virtual, or one node");
    return allowed_cpus();
}

// --allow CIDR[,CIDR...] for every stream, --allow K=CIDR[,...] for stream K.
void apply_allowlist(const std::vector<std::string>& items, const std::map<int, Stream*>& by_slab) {
    for (const std::string& item : items) {
        const auto eq = item.find('=');
        if (eq == std::string::npos) {
            for (auto& [slab, s] : by_slab) s->allowed.add_list(item);
            continue;
        }
        const int slab = parse_index_list(item.substr(0, eq), kMaxAxis - 1, "--allow stream")[0];
        if (!by_slab.count(slab)) throw std::invalid_argument("--allow '" + item + "': no --stream for slab " +
                                                              std::to_string(slab));
        by_slab.at(slab)->allowed.add_list(item.substr(eq + 1));
    }
    for (auto& [slab, s] : by_slab)
        if (s->allowed.empty())
            spdlog::warn("stream {}: no --allow list: any host that can reach the port can write into the slab", slab);
        else
            spdlog::info("stream {}: accepting packets from {}", slab, s->allowed.to_string());
}

// On a clean stop: this receiver's slab files go, and its entries leave the
// descriptor (which goes too when no other receiver's slabs are left in it).
// A renderer that has them mapped keeps its mapping until it lets go.
void remove_own_slabs(const std::string& dir, const std::string& name, const std::string& descriptor_path,
                      const std::vector<int>& mine) {
    for (int k : mine) ::unlink(slab_file_path(dir, name, k).c_str());
    try {
        Descriptor d = read_descriptor(descriptor_path);
        std::vector<SlabEntry> others;
        for (const auto& e : d.slabs)
            if (std::find(mine.begin(), mine.end(), e.index) == mine.end() &&
                ::access((dir + "/" + e.file).c_str(), R_OK) == 0)
                others.push_back(e);
        d.slabs = others;
        if (others.empty()) ::unlink(descriptor_path.c_str());
        else write_descriptor(descriptor_path, d);
    } catch (const std::exception& e) {
        spdlog::warn("receive: {}", e.what());
    }
    ::rmdir(dir.c_str());  // only if nothing else is in it
    spdlog::info("receive: stopped; removed its slabs from {} (--keep leaves them for readers)", dir);
}

void receive_loop(Stream& s, int batch, bool gro) {
    try {
        pin_current_thread(s.cpu);
    } catch (const std::exception& e) {
        spdlog::error("stream {}: {}", s.spec.slab, e.what());
        request_stop();
        return;
    }
    BatchReceiver receiver(batch, gro);
    if (!s.allowed.empty()) receiver.set_filter(&s.allowed);
    SlabLive& live = s.slab.header_rw().live;
    live.foreign.store(0);  // this receiver's own count, as for the other traffic counters
    while (!stop_requested()) {
        std::int64_t now = 0;
        const long bytes = receiver.receive(s.socket.fd(), [&](const std::uint8_t* data, std::size_t length) {
            if (now == 0) now = monotonic_ns();  // one clock read per batch
            s.receiver->handle(data, length, now);
        });
        if (bytes < 0) {
            spdlog::error("stream {}: recvmmsg: {}", s.spec.slab, std::strerror(errno));
            break;
        }
        if (bytes == 0) continue;
        s.receiver->publish();
        live.foreign.store(receiver.foreign(), std::memory_order_relaxed);
        s.counters.bytes.fetch_add(static_cast<std::uint64_t>(bytes), std::memory_order_relaxed);
    }
}

// Keeps slabs that another receiver process on this host listed in the same
// descriptor (same volume), so several daemons can share one NAME.slabcast.
void merge_existing(const std::string& dir, const std::string& path, Descriptor& d) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;
    try {
        const Descriptor old = read_descriptor(path);
        if (!(old.dims == d.dims) || old.slab_depth != d.slab_depth || old.ghost_planes != d.ghost_planes ||
            old.field != d.field)
            return;
        for (const auto& e : old.slabs) {
            bool mine = false;
            for (const auto& m : d.slabs) mine |= m.index == e.index;
            if (!mine && ::access((dir + "/" + e.file).c_str(), R_OK) == 0) d.slabs.push_back(e);
        }
    } catch (const std::exception& e) {
        spdlog::warn("replacing unreadable descriptor: {}", e.what());
    }
}

// Room in the shm directory for every slab not yet there, before the first is
// written: pre-faulting a slab in a full tmpfs ended the receiver in SIGBUS.
// (Sizes are within kMaxAxis, checked by parse_dims: no sum below can wrap.)
void require_room_for_slabs(const ReceiveOptions& o, const Dims& dims,
                            const std::vector<std::unique_ptr<Stream>>& streams) {
    std::uint64_t need = 0;
    for (const auto& s : streams) {
        const SlabGeometry g = slab_geometry(dims, o.slab_depth, s->spec.slab, o.ghost_planes);
        const std::uint64_t bytes = kSlabHeaderBytes + static_cast<std::uint64_t>(dims.plane()) *
                                                           static_cast<std::uint64_t>(g.stored_planes()) * sizeof(float);
        // A slab of this very shape already there (a restart re-attaches to it)
        // holds the pages it has. One of another shape is replaced by a new
        // file, and its pages stay taken while a renderer maps it.
        struct stat st {};
        const std::string path = slab_file_path(o.shm_dir, o.name, s->spec.slab);
        const bool held = slab_file_matches(path, dims, o.slab_depth, g, o.field) && ::stat(path.c_str(), &st) == 0;
        const std::uint64_t allocated = held ? static_cast<std::uint64_t>(st.st_blocks) * 512 : 0;
        need += bytes - std::min(bytes, allocated);
    }
    require_free_space(o.shm_dir, need,
                       fmt::format("the slabs ({} of {}, depth {})", streams.size(), to_string(dims), o.slab_depth));
}

int run_receive(const ReceiveOptions& o) {
    const Dims dims = parse_dims(o.dims_text);
    if (o.name.empty() || o.name.find('/') != std::string::npos)
        throw std::invalid_argument("--name '" + o.name + "' must be a plain name");
    const bool bare_v6 = o.listen.find(':') != std::string::npos && o.listen.front() != '[';
    const Endpoint listen = parse_endpoint(bare_v6 ? "[" + o.listen + "]:0" : o.listen + ":0");
    const std::string address = listen_address(o.listen);
    const std::string nic = o.interface.empty() ? interface_of_address(address) : o.interface;
    const std::vector<int> cpus = choose_cpus(o, nic, address);
    {
        std::vector<HostFinding> limits{check_sysctl(kBacklogSysctl), check_irqbalance(), check_governor()};
        if (!nic.empty() && nic != "lo") limits.push_back(check_mtu(nic));
        warn_limits("receive", limits);
    }

    std::vector<std::unique_ptr<Stream>> streams;
    std::map<int, Stream*> by_slab;
    std::map<int, bool> ports;
    for (const auto& text : o.streams) {
        auto s = std::make_unique<Stream>();
        s->spec = parse_stream(text);
        slab_geometry(dims, o.slab_depth, s->spec.slab, o.ghost_planes);  // validates the index
        if (by_slab.count(s->spec.slab)) throw std::invalid_argument("--stream: slab " + text + " given twice");
        if (ports[s->spec.port]) throw std::invalid_argument("--stream: port in " + text + " already used");
        ports[s->spec.port] = true;
        by_slab[s->spec.slab] = s.get();
        streams.push_back(std::move(s));
    }
    if (streams.empty()) throw std::invalid_argument("give at least one --stream SLAB:PORT");
    apply_allowlist(o.allow, by_slab);

    if (::mkdir(o.shm_dir.c_str(), 0750) != 0 && errno != EEXIST)
        throw std::runtime_error(o.shm_dir + ": cannot create: " + std::strerror(errno));
    require_own_directory(o.shm_dir);

    StatusReporter status("receive", o.stats_json);
    Descriptor descriptor;
    descriptor.name = o.name;
    descriptor.field = o.field;
    descriptor.dims = dims;
    descriptor.slab_depth = o.slab_depth;
    descriptor.ghost_planes = o.ghost_planes;

    require_room_for_slabs(o, dims, streams);
    bool gro_ok = true;
    // Allocate, place and pre-fault every slab before any data can arrive.
    for (std::size_t i = 0; i < streams.size(); ++i) {
        Stream& s = *streams[i];
        s.cpu = cpus[i % cpus.size()];
        s.node = numa_node_of(s.cpu);
        const SlabGeometry g = slab_geometry(dims, o.slab_depth, s.spec.slab, o.ghost_planes);
        const std::string path = slab_file_path(o.shm_dir, o.name, s.spec.slab);
        s.slab = SlabMapping::create(path, dims, o.slab_depth, g, o.field);
        try {
            bind_and_prefault(s.slab.values_rw(), s.slab.data_bytes(), s.node, s.slab.fd(), kSlabHeaderBytes);
        } catch (const std::exception& e) {
            throw std::runtime_error(path + ": " + format_bytes(s.slab.data_bytes()) + " of values: " + e.what() +
                                     "; " + o.shm_dir + " has " + format_bytes(free_bytes(o.shm_dir)) + " free");
        }
        descriptor.slabs.push_back(SlabEntry{s.spec.slab, slab_file_name(o.name, s.spec.slab)});

        s.socket = Socket(open_udp_socket(listen.addr.ss_family));
        raise_buffer(s.socket.fd(), true, o.rcvbuf_mb << 20, "receive");
        set_receive_timeout(s.socket.fd(), 100);
        if (o.gro && !enable_gro(s.socket.fd())) {
            spdlog::warn("receive: UDP GRO unavailable here; receiving one datagram per call slot");
            gro_ok = false;
        }
        bind_socket(s.socket.fd(), with_port(listen, s.spec.port));
        spdlog::info("stream {}: planes {}..{} (+{} ghost) on {}:{} -> {}, cpu {}, NUMA node {}", s.spec.slab,
                     g.z_begin, g.z_end - 1, g.ghost_planes(), o.listen, s.spec.port, path, s.cpu, s.node);

        StreamCounters* counters = &s.counters;
        s.receiver = std::make_unique<SlabReceiver>(
            s.spec.slab, s.slab,
            [counters, &status](const StepReport& r) {
                counters->finished_expected += r.expected;
                counters->finished_records += r.records;
                ++counters->steps_finished;
                spdlog::info("stream {} step {}: {} of {} records, loss {:.3f}%, {} duplicates, {} rejected, {} stale{}",
                             r.stream, r.step, r.records, r.expected, r.loss_percent(), r.duplicates, r.rejected,
                             r.stale, r.complete ? "" : " (incomplete)");
                status.event({{"kind", "step"},       {"stream", r.stream},       {"step", r.step},
                              {"records", r.records}, {"expected", r.expected},   {"ghost_records", r.ghost_records},
                              {"duplicates", r.duplicates}, {"rejected", r.rejected}, {"stale", r.stale},
                              {"packets", r.packets}, {"complete", r.complete},  {"loss_percent", r.loss_percent()}});
            },
            static_cast<std::int64_t>(o.stale_window_ms) * 1'000'000);
    }
    // Seamless slabs: the top plane of slab k is also slab k+1's ghost plane.
    if (o.ghost_planes == 1)
        for (auto& [slab, s] : by_slab)
            if (auto next = by_slab.find(slab + 1); next != by_slab.end())
                s->receiver->mirror_top_plane_to(next->second->slab.values_rw());

    const std::string descriptor_path = slabcast::descriptor_path(o.shm_dir, o.name);
    merge_existing(o.shm_dir, descriptor_path, descriptor);
    write_descriptor(descriptor_path, descriptor);
    spdlog::info("receive: {} stream(s) of {} ready; descriptor {}", streams.size(), to_string(dims), descriptor_path);

    for (auto& s : streams) s->thread = std::thread(receive_loop, std::ref(*s), o.batch, o.gro && gro_ok);

    RateMeter meter;
    meter.gbit_per_s(0);
    // Two seconds without a packet after the other streams moved on: longer
    // than any pause inside a step, short enough to be told while it matters.
    StreamWatch watch(2'000'000'000);
    status.start([&] {
        std::uint64_t bytes = 0, packets = 0, rejected = 0, stale = 0, dups = 0, fexp = 0, frec = 0, foreign = 0;
        nlohmann::json per_stream = nlohmann::json::array();
        std::int64_t step = -1;
        double progress = 0;
        for (auto& s : streams) {
            const SlabLive& live = s->slab.header().live;
            bytes += s->counters.bytes.load();
            packets += live.packets.load();
            rejected += live.rejected.load();
            stale += live.stale.load();
            dups += live.duplicates.load();
            foreign += live.foreign.load();
            fexp += s->counters.finished_expected.load();
            frec += s->counters.finished_records.load();
            step = std::max<std::int64_t>(step, live.step.load());
            const double p = static_cast<double>(live.step_records.load()) / static_cast<double>(live.step_expected.load());
            progress += p / static_cast<double>(streams.size());
            per_stream.push_back({{"stream", s->spec.slab}, {"step", live.step.load()}, {"progress", p},
                                  {"packets", live.packets.load()}, {"foreign", live.foreign.load()},
                                  {"last_step", live.last_step.load()},
                                  {"last_step_loss_percent", live.last_step_loss_ppm.load() / 1e4}});
        }
        std::vector<StreamWatch::Sample> samples;
        for (auto& s : streams)
            samples.push_back({s->spec.slab, s->slab.header().live.packets.load(), s->slab.header().live.generation.load()});
        const StreamWatch::Changes changes = watch.update(samples, monotonic_ns());
        for (int k : changes.missing) {
            spdlog::warn("receive: stream {} missing: no packets for 2 s while the other streams began a new step "
                         "(its shuffler down, or its path cut)", k);
            status.event({{"kind", "stream_missing"}, {"stream", k}});
        }
        for (int k : changes.back) {
            spdlog::info("receive: stream {} back: packets again", k);
            status.event({{"kind", "stream_back"}, {"stream", k}});
        }
        const std::set<int>& missing = watch.missing();
        const double gbps = meter.gbit_per_s(bytes);
        const double loss = fexp ? 100.0 * static_cast<double>(fexp - frec) / static_cast<double>(fexp) : 0.0;
        return nlohmann::json{
            {"line", fmt::format("receive: {:.2f} Gbit/s, {} packets, loss {:.3f}%, step {} ({:.0f}% placed), "
                                 "rejected {}, stale {}, duplicates {}{}{}",
                                 gbps, packets, loss, step, 100 * progress, rejected, stale, dups,
                                 foreign ? fmt::format(", foreign {}", foreign) : std::string(),
                                 missing.empty() ? std::string() : fmt::format(", MISSING streams {}", fmt::join(missing, ",")))},
            {"missing", missing}, {"gbps", gbps}, {"packets", packets}, {"loss_percent", loss}, {"step", step}, {"rejected", rejected},
            {"stale", stale}, {"duplicates", dups}, {"foreign", foreign}, {"streams", per_stream}};
    });

    for (auto& s : streams) s->thread.join();
    for (auto& s : streams) s->receiver->finish_current();
    for (auto& s : streams) s->slab.header_rw().live.writer_pid.store(0);
    status.stop();
    if (o.keep) {
        spdlog::info("receive: stopped; shared memory kept in {} (slabcast clean --name {} removes it)", o.shm_dir,
                     o.name);
        return 0;
    }
    std::vector<int> mine;
    for (auto& s : streams) mine.push_back(s->spec.slab);
    streams.clear();  // unmaps the slabs
    remove_own_slabs(o.shm_dir, o.name, descriptor_path, mine);
    return 0;
}

}  // namespace

void register_receive(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<ReceiveOptions>();
    CLI::App* c = root.add_subcommand("receive", "receiver daemon: UDP streams into shared-memory slabs");
    c->add_option("--name", o->name, "name of the volume (descriptor DIR/NAME.slabcast)")->required();
    c->add_option("--dims", o->dims_text, "volume size NX,NY,NZ")->required();
    c->add_option("--slab-depth", o->slab_depth, "z planes per slab (stream)")
        ->required()
        ->check(CLI::Range(std::int64_t{1}, kMaxAxis));
    c->add_option("--listen", o->listen, "address to receive on, e.g. 0.0.0.0 or 127.0.0.1")->required();
    c->add_option("--stream", o->streams, "SLAB:PORT, once per stream")->required();
    c->add_option("--shm-dir", o->shm_dir, "directory for slabs and descriptor")->capture_default_str();
    c->add_option("--field", o->field, "name of the field")->capture_default_str();
    c->add_option("--ghost-planes", o->ghost_planes, "planes stored below each slab (0 or 1)")
        ->check(CLI::Range(0, 1))
        ->capture_default_str();
    c->add_option("--cpus", o->cpus, "CPUs for the stream threads, e.g. 0,2-3 (default: the NIC's NUMA node)");
    c->add_option("--interface", o->interface, "NIC whose NUMA node gets the threads (default: the one with --listen)");
    c->add_option("--allow", o->allow,
                  "senders to accept: CIDR[,CIDR...] for every stream, or K=CIDR[,...] for stream K; repeatable "
                  "(default: any sender, with a warning)");
    c->add_flag("--keep", o->keep, "on SIGINT/SIGTERM leave the slabs and descriptor for readers (default: remove "
                                   "this receiver's; a kill -9 leaves them, and a restart re-attaches)");
    // The kernel books SO_RCVBUF in an int, doubled: 1024 MiB is as far as it goes.
    c->add_option("--rcvbuf-mb", o->rcvbuf_mb, "socket receive buffer, MiB")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    c->add_option("--batch", o->batch, "datagrams per recvmmsg call")->check(CLI::Range(1, 1024))->capture_default_str();
    c->add_option("--gro", o->gro, "UDP receive offload: the kernel hands over coalesced datagrams")
        ->capture_default_str();
    c->add_option("--stale-window-ms", o->stale_window_ms,
                  "packets of a step replaced less than this ago are stale (late); older ones restart it")
        ->check(CLI::Range(0, 60000))
        ->capture_default_str();
    c->add_option("--stats-json", o->stats_json, "append JSON lines (status every second, step reports)");
    c->callback([o, &run] { run = [o] { return run_receive(*o); }; });
}

}  // namespace slabcast
