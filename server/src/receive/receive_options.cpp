// `slabcast receive`'s command line: what each option means, checked as it
// is parsed; the receiver itself is receive.cpp.
#include "base/option_checks.h"
#include "base/roles.h"
#include "receive/receive_options.h"

#include "slabcast/publication.h"
#include "slabcast/send_order.h"
#include "slabcast/volume.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace slabcast {

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
    c->add_option("--land", o->land,
                  "full raw run packets sent in scan order land straight in the slab (the kernel's copy is the "
                  "only one; a datagram that lands amiss is copied out before anything is stored)")
        ->capture_default_str();
    c->add_option("--fec-window", o->fec_window,
                  "forward error correction: groups a stream holds open for repair, at least twice the senders' "
                  "interleave depth (memory: GROUPS x 2.2 MiB a stream, made at the start; 0: FEC datagrams are "
                  "rejected)")
        ->check(CLI::Range(0, 128))
        ->capture_default_str();
    c->add_option("--stale-window-ms", o->stale_window_ms,
                  "packets of a step replaced less than this ago are stale (late); older ones restart it")
        ->check(CLI::Range(0, 60000))
        ->capture_default_str();
    CLI::Option* buffers =
        c->add_option("--buffers", o->buffers,
                      "value buffers per slab: one to write into and, for each reader, the most it pins at once "
                      "(a live view 2, a view with History N N + 1, a recorder 1): 3 for one view; memory: "
                      "buffers x 1.25 x the slab")
            ->check(CLI::Range(kMinBuffers, kMaxBuffers))
            ->capture_default_str();
    c->add_option("--readers", o->readers,
                  "the slabs' readers, e.g. view,view,record,history:4: sets --buffers to what they need "
                  "(with --buffers too: a warning when it is fewer)")
        ->check(parsed_by(parse_reader_mix, "LIST"));
    c->add_option("--step-timeout", o->step_timeout_ms,
                  "ms without a packet of the step being written after which it is published as it is")
        ->check(CLI::Range(1, 600000))
        ->capture_default_str();
    c->add_option("--fill", o->fill, "a published step's missing values: previous (the previous step's) or nearest "
                                     "(a coarser sample of the same step where one came, age 254; else previous)")
        ->check(parsed_by(parse_fill_rule, "RULE"))->capture_default_str();
    c->add_option("--stats-json", o->stats_json, "append JSON lines (status every second, step reports)");
    c->callback([o, buffers, &run] {
        if (!o->readers.empty()) {
            const int need = buffers_for_readers(parse_reader_mix(o->readers));
            if (buffers->count() == 0 && need > kMaxBuffers)
                throw CLI::ValidationError("--readers", o->readers + " need " + std::to_string(need) +
                                                            " buffers, more than " + std::to_string(kMaxBuffers));
            if (buffers->count() == 0) o->buffers = need;
            else if (o->buffers < need)
                spdlog::warn("receive: --buffers {} for readers {}, which need {}: steps will be dropped",
                             o->buffers, o->readers, need);
        }
        run = [o] { return run_receive(*o); };
    });
}

}  // namespace slabcast
