// `slabcast serve`: the receiving end of the data mover (docs/mover.md), its
// command line. One TCP port; every transfer arrives over one or more streams
// that name it in their Hello, and goes into a directory beneath --root.
// What serve does with a connection is mover::Server (server.h); what one
// transfer may ask of the host is ReceiveLimits (docs/mover.md, "Limits").
#include "base/roles.h"
#include "mover/server.h"

#include <memory>

namespace slabcast {

void register_serve(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<mover::ServeOptions>();
    CLI::App* c = root.add_subcommand("serve", "data mover, receiving end: files from `slabcast move` into --root");
    c->add_option("--root", o->root, "directory that transfers go into (created if missing)")->required();
    c->add_option("--listen", o->listen, "address to listen on")->capture_default_str();
    c->add_option("--port", o->port, "TCP port")->check(CLI::Range(1, 65535))->capture_default_str();
    c->add_option("--writers", o->writers, "threads that read finished files back (--read-back), per transfer")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    c->add_option("--ring-mb", o->ring_mb, "block cache per transfer, MiB")
        ->check(CLI::Range(16, 65536))
        ->capture_default_str();
    c->add_option("--allow", o->allow, "clients to accept: CIDR[,CIDR...] (default: any, with a warning)");
    c->add_option("--tune-file", o->tune_file, "file with a line writers=N, re-read every 0.2 s while running");
    c->add_flag("--read-back", o->read_back,
                "read each finished file back and check every block against its checksum before it goes into place");
    c->add_option("--peer-timeout", o->peer_timeout_s,
                  "seconds without an answer from a client (path cut, host down) before its transfer stops; "
                  "also the most a transfer's manifest may take from the client's Hello to its last byte, "
                  "however the client paces it")
        ->check(CLI::Range(2, 3600))
        ->capture_default_str();
    c->add_flag("--allow-pull", o->allow_pull,
                "also give files beneath --root out to clients that ask (slabcast stage --from); --allow limits who");
    c->add_flag("--once", o->once, "exit after the first transfer (exit code 1 if it failed)");
    c->add_option("--key-file", o->key_file,
                  "key (slabcast keygen) that every client must prove it holds, as this server proves it to them; "
                  "required unless --listen is a loopback address");
    c->add_flag("--require-encryption", o->require_encryption,
                "refuse clients that do not encrypt their streams (move --encrypt; clients with the key follow)");
    c->add_flag("--insecure-no-auth", o->insecure_no_auth,
                "listen beyond loopback without --key-file: any client that reaches the port may write into --root");
    // Limits (docs/mover.md, "Limits").
    c->add_option("--max-manifest-mb", o->max_manifest_mb, "largest manifest (the list of names) a transfer may send, MiB")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    c->add_option("--max-files", o->max_files, "files and directories one transfer may list")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100'000'000}))
        ->capture_default_str();
    c->add_option("--max-blocks", o->max_blocks,
                  "blocks one transfer may declare (8 bytes of bookkeeping each, once its file begins to arrive)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
        ->capture_default_str();
    c->add_option("--max-connections", o->max_connections, "streams served at once (a thread each), all transfers together")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    c->add_option("--max-transfers", o->max_transfers,
                  "transfers (in, once their manifest has arrived, and pulls out) at once")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    c->add_option("--max-transfers-per-address", o->max_transfers_per_address,
                  "transfers and pulls one client address may have open at once, counted from their Hello")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    c->add_option("--max-waiting", o->max_waiting,
                  "connections held until their Hello (no thread each); beyond it the oldest of the address "
                  "holding the most is closed")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    c->add_option("--hello-timeout", o->hello_timeout_s, "seconds a new connection has to send its Hello")
        ->check(CLI::Range(1, 600))
        ->capture_default_str();
    c->add_option("--idle-timeout", o->idle_timeout_s,
                  "seconds a stream may send (or take) nothing before it is dropped, after its Hello")
        ->check(CLI::Range(2, 86400))
        ->capture_default_str();
    c->callback([o, &run] { run = [o] { return mover::Server(*o).run(); }; });
}

}  // namespace slabcast
