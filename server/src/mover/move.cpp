// `slabcast move SRC... HOST:DEST`: the sending end of the data mover
// (docs/mover.md). Files and directories go to a `slabcast serve` on HOST,
// into DEST beneath its --root, as tagged blocks over several TCP streams.
#include "base/key_file.h"
#include "mover/manifest.h"
#include "mover/send_transfer.h"
#include "base/roles.h"
#include "base/stop_signal.h"

#include "slabcast/units.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

namespace slabcast {
namespace {
using namespace mover;

struct MoveOptions {
    std::vector<std::string> paths;  // sources..., then HOST:DEST
    int port = 7100;
    int streams = 4;
    int readers = 4;
    int block_kb = 4096;
    int ring_mb = 256;
    std::string progress = "auto";
    std::string tune_file;
    int peer_timeout_s = 60;
    std::string key_file;
    bool encrypt = false;
};

// "host:dest", "[v6]:dest"; DEST may be empty (the server's root).
std::pair<std::string, std::string> parse_target(const std::string& t) {
    if (!t.empty() && t.front() == '[') {
        const auto close = t.find("]:");
        if (close == std::string::npos) throw std::invalid_argument("target '" + t + "': expected [ADDRESS]:DEST");
        return {t.substr(1, close - 1), t.substr(close + 2)};
    }
    const auto colon = t.find(':');
    if (colon == std::string::npos || colon == 0)
        throw std::invalid_argument("target '" + t + "': expected HOST:DEST (DEST inside the server's --root)");
    return {t.substr(0, colon), t.substr(colon + 1)};
}

class ProgressView {
public:
    ProgressView(const std::string& mode, const SendTransfer& t) : t_(t) {
        bar_ = mode == "bar" || (mode == "auto" && ::isatty(STDERR_FILENO));
        json_ = mode == "json" || (mode == "auto" && !bar_);
        if (mode != "auto" && mode != "bar" && mode != "json" && mode != "none")
            throw std::invalid_argument("--progress must be auto, bar, json or none");
        start_ = last_ = std::chrono::steady_clock::now();
    }

    void show(bool final = false) {
        const auto now = std::chrono::steady_clock::now();
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        const double dt = std::chrono::duration<double>(now - last_).count();
        const auto& p = t_.progress();
        const std::uint64_t sent = p.bytes_read.load(), files = p.files_read.load();
        const double rate = dt > 0 ? static_cast<double>(sent - last_bytes_) / dt : 0;
        smoothed_ = smoothed_ == 0 ? rate : 0.7 * smoothed_ + 0.3 * rate;
        last_ = now;
        last_bytes_ = sent;
        const double total = static_cast<double>(std::max<std::uint64_t>(1, t_.bytes_to_send()));
        const double fraction = std::min(1.0, static_cast<double>(sent) / total);
        const double eta = smoothed_ > 0 ? (total - static_cast<double>(sent)) / smoothed_ : 0;
        if (bar_) {
            const int width = 30, filled = static_cast<int>(fraction * width);
            std::fprintf(stderr, "\r[%s%s] %s/%s  %llu/%llu files  %.2f Gbit/s  %s  ",
                         std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(),
                         format_bytes(sent).c_str(), format_bytes(t_.bytes_to_send()).c_str(),
                         static_cast<unsigned long long>(files), static_cast<unsigned long long>(t_.files_to_send()),
                         smoothed_ * 8e-9,
                         final ? "done" : fmt::format("ETA {}:{:02d}", static_cast<int>(eta) / 60, static_cast<int>(eta) % 60).c_str());
            if (final) std::fputc('\n', stderr);
            std::fflush(stderr);
        } else if (json_) {
            std::printf("%s\n", nlohmann::json{{"kind", final ? "final" : "progress"}, {"seconds", elapsed},
                                               {"bytes", sent}, {"bytes_total", t_.bytes_to_send()},
                                               {"files", files}, {"files_total", t_.files_to_send()},
                                               {"gbps", smoothed_ * 8e-9}, {"eta_s", eta},
                                               {"streams", t_.streams()}, {"readers", t_.readers()}}
                                        .dump()
                                        .c_str());
            std::fflush(stdout);
        }
    }

private:
    const SendTransfer& t_;
    bool bar_ = false, json_ = false;
    std::chrono::steady_clock::time_point start_, last_;
    std::uint64_t last_bytes_ = 0;
    double smoothed_ = 0;
};

// --tune-file: lines "streams=N" and "readers=N", applied while it runs.
void retune(const std::string& path, SendTransfer& t) {
    if (path.empty()) return;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = line.substr(0, eq);
        const int n = std::atoi(line.c_str() + eq + 1);
        if (n < 1 || n > 128) continue;
        if (key == "streams" && n != t.streams()) {
            spdlog::info("move: {} streams", n);
            t.set_streams(n);
        } else if (key == "readers" && n != t.readers()) {
            spdlog::info("move: {} readers", n);
            t.set_readers(n);
        }
    }
}

int run_move(const MoveOptions& o) {
    if (o.paths.size() < 2) throw std::invalid_argument("give SRC... HOST:DEST");
    const auto [host, dest] = parse_target(o.paths.back());
    if (o.block_kb < 4 || o.block_kb > 65536 || o.block_kb % 4 != 0)
        throw std::invalid_argument("--block-kb must be a multiple of 4 in 4..65536");
    std::optional<Key> key;
    if (!o.key_file.empty()) key = load_sync_key(o.key_file);  // before the scan: a bad key file fails at once
    if (o.encrypt && !key) throw std::invalid_argument("--encrypt needs --key-file (the session keys come from it)");
    const std::vector<std::string> sources(o.paths.begin(), o.paths.end() - 1);
    // The streams connect while the sources are scanned (early_streams.h).
    auto early = std::make_shared<EarlyStreams>(host, o.port, o.streams, o.peer_timeout_s);
    Manifest manifest = scan_sources(sources, static_cast<std::uint32_t>(o.block_kb) << 10);
    for (const auto& s : manifest.skipped) spdlog::warn("move: skipped {}", s);
    const std::size_t files = manifest.files.size();
    const std::uint64_t bytes = manifest.total_bytes();
    SendTransfer t(std::move(manifest), SendSettings{host, o.port, dest, o.streams, o.readers,
                                                     static_cast<std::size_t>(o.ring_mb) << 20, o.peer_timeout_s,
                                                     0, early, key, o.encrypt});
    ProgressView view(o.progress, t);
    const auto t0 = std::chrono::steady_clock::now();
    t.start();
    // The transfer ends in its own thread; this one shows progress and takes
    // tuning every 0.25 s meanwhile, and goes on the moment it ends.
    std::mutex ended_mutex;
    std::condition_variable ended;
    bool done = false;
    std::string report, error;
    std::thread waiter([&] {
        std::string r, e;
        try {
            r = t.finish();
        } catch (const std::exception& x) {
            e = x.what();
        }
        std::lock_guard lock(ended_mutex);
        report = std::move(r);
        error = std::move(e);
        done = true;
        ended.notify_all();
    });
    for (;;) {
        {
            std::unique_lock lock(ended_mutex);
            if (ended.wait_for(lock, std::chrono::milliseconds(250), [&] { return done; })) break;
        }
        if (stop_requested()) {
            // The process ends now, its threads with it (unwinding would tear
            // the transfer down under the thread still waiting on it); the
            // server keeps what arrived, and a rerun resumes.
            spdlog::error("move: stopped; run the same command again to send what is missing");
            spdlog::default_logger()->flush();
            std::fflush(nullptr);
            std::_Exit(130);
        }
        retune(o.tune_file, t);
        view.show();
    }
    waiter.join();
    view.show(true);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!error.empty()) {
        spdlog::error("move: {} (run the same command again to send what is missing)", error);
        return 1;
    }
    TransferReport r;
    try {
        r = parse_report(report);
    } catch (const std::exception& e) {
        spdlog::error("move: {} (whether the files arrived is not known: run the same command again)", e.what());
        return 1;
    }
    const std::uint64_t sent = t.progress().bytes_read.load();
    const Cipher cipher = t.cipher();
    spdlog::info("move: {} files ({}) to {}:{}: {} written, {} already there, {} failed; {} read in {:.2f} s, {:.2f} "
                 "Gbit/s{}",
                 files, format_bytes(bytes), host, dest, r.files, r.in_place, r.failed.size(),
                 format_bytes(sent), seconds, static_cast<double>(sent) * 8e-9 / seconds,
                 cipher == Cipher::None ? "" : fmt::format(", encrypted ({})", to_string(cipher)));
    for (const auto& f : r.failed) spdlog::error("move: {}: {}", f.path, f.why);
    return r.failed.empty() && t.progress().files_failed == 0 ? 0 : 1;
}

}  // namespace

void register_move(CLI::App& root, RoleMain& run) {
    auto o = std::make_shared<MoveOptions>();
    CLI::App* c = root.add_subcommand("move", "data mover, sending end: files and directories to a `slabcast serve`");
    c->add_option("paths", o->paths, "SRC... HOST:DEST (DEST inside the server's --root; each SRC under its own name)")
        ->required();
    c->add_option("--port", o->port, "the server's TCP port")->capture_default_str();
    c->add_option("--streams", o->streams, "TCP streams (back-end threads)")
        ->check(CLI::Range(1, 128))
        ->capture_default_str();
    c->add_option("--readers", o->readers, "threads reading files (front end)")
        ->check(CLI::Range(1, 128))
        ->capture_default_str();
    c->add_option("--block-kb", o->block_kb, "block size, KiB")->capture_default_str();
    c->add_option("--ring-mb", o->ring_mb, "block cache, MiB")->capture_default_str();
    c->add_option("--progress", o->progress, "auto (a bar on a terminal, else JSON lines), bar, json or none")
        ->capture_default_str();
    c->add_option("--tune-file", o->tune_file, "file with lines streams=N / readers=N, re-read while running");
    c->add_option("--peer-timeout", o->peer_timeout_s, "seconds without an answer from the server (path cut, host down) before giving up")
        ->check(CLI::Range(2, 3600))
        ->capture_default_str();
    c->add_option("--key-file", o->key_file,
                  "the server's key (slabcast keygen): this client and the server prove to each other that they "
                  "hold it, on every stream");
    c->add_flag("--encrypt", o->encrypt,
                "seal every stream's data with keys from --key-file (AES-256-GCM with AES-NI at both ends, else "
                "XChaCha20-Poly1305); a server that requires it gets it anyway");
    c->callback([o, &run] { run = [o] { return run_move(*o); }; });
}

}  // namespace slabcast
