// The life of one transfer on the receiving side: its streams joining and
// ending (stream 0 first, the others once the manifest is taken), when
// nothing more can come, and how it stops early. What each stage does is in
// its own file: receive_manifest.cpp (the manifest, the limits, the tree
// prepared), receive_frames.cpp (each stream's back end: frames checked, the
// rest into the ring), receive_direct.cpp (a Data frame's payload from the
// stream straight into its part file), receive_blocks.cpp (the front-end
// writers: file ends, zero blocks, failures), receive_finish.cpp (whole
// files verified and moved into place, the report). The block-based design
// is Balman et al., 2012, section 5.3.
#include "mover/receive_transfer.h"

#include "mover/peer_text.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <future>
#include <stdexcept>
#include <thread>

namespace slabcast::mover {

// For a name too long for `.NAME.slabcast-part` (NAME_MAX is 255 bytes, and
// a legal name may have 255): its first 200 bytes (not cut inside a UTF-8
// character) and a hash of the whole name. One fixed name per file, so a
// resume finds it again.
std::string part_file_name(const std::string& name) {
    std::string plain = "." + name + ".slabcast-part";
    if (plain.size() <= 255) return plain;
    std::size_t keep = 200;
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    return fmt::format(".{}.{:016x}.slabcast-part", name.substr(0, keep), checksum(name.data(), name.size()));
}

ReceiveTransfer::ReceiveTransfer(std::uint64_t id, const std::string& root, std::string prefix,
                                 ReceiveSettings settings)
    : id_(id), tree_(root), prefix_(std::move(prefix)), settings_(std::move(settings)) {}

ReceiveTransfer::~ReceiveTransfer() {
    if (ring_) ring_->abort();
    set_writers(0);
}

std::string ReceiveTransfer::path_of(std::uint32_t file) const {
    return prefix_.empty() ? manifest_.files[file].path : prefix_ + "/" + manifest_.files[file].path;
}

// Written under a hidden name next to its final one, and renamed only once
// verified: a reader of the destination never sees half a file.
std::string ReceiveTransfer::part_of(std::uint32_t file) const {
    const auto [dir, name] = split_path(path_of(file));
    return (dir.empty() ? "" : dir + "/") + part_file_name(name);
}

Journal::Version ReceiveTransfer::version_of(std::uint32_t file) const {
    const ManifestFile& m = manifest_.files[file];
    return Journal::Version{m.size, m.mtime_ns, manifest_.block};
}

void ReceiveTransfer::run_first_stream(Channel& c) {
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;  // stopped before it began (a pull given up while connecting)
        streams_.push_back(c.fd());
        ++carriers_;
    }
    {
        std::lock_guard lock(control_send_);
        control_ = &c;
    }
    try {
        const std::string manifest = take_manifest_in_time(c);
        if (settings_.manifest_taken) settings_.manifest_taken();
        // The sender sends blocks right behind its manifest: stream 0 reads
        // them ahead, as the others do (run_stream), while another thread
        // parses the manifest and looks at the destination (45-90 ms for
        // 10,000 files), and it writes the Have.
        auto preparing = std::async(std::launch::async, [&] { prepare(manifest, c); });
        while (preparing.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            if (!read_ahead(c)) break;
        preparing.get();
    } catch (const std::exception& e) {
        abort(e.what());  // tells the sender why
    }
    if (prepared_) {
        maybe_finish();  // nothing to send (all in place) is a finished transfer too, once Done comes
        carry_blocks(c, true);  // until Done
    }
    stream_ended();
    {
        std::unique_lock lock(mutex_);
        while (!finished_) {
            ended_.wait_for(lock, std::chrono::milliseconds(100));
            if (finished_ || !drained_ || carriers_ > 0 || slots_pending_ > 0 ||
                std::chrono::steady_clock::now() - drained_at_ < std::chrono::seconds(settings_.late_streams_s))
                continue;
            std::vector<std::uint32_t> missing;
            for (std::uint32_t i = 0; i < files_.size(); ++i)
                if (files_[i].status == FileState::Status::Waiting) missing.push_back(i);
            lock.unlock();
            for (const std::uint32_t i : missing) fail_file(i, "the sender said Done before all of it arrived");
            maybe_finish();
            lock.lock();
        }
        forget_stream(c.fd());
    }
    std::lock_guard lock(control_send_);
    control_ = nullptr;  // the channel is the caller's again
}

void ReceiveTransfer::run_stream(Channel& c) {
    // A stream may come while the manifest is being taken (the sender opens
    // its streams meanwhile, and sends blocks before the Have): until the
    // files to write to are ready, or the transfer ends, it reads what
    // arrives into the channel (read_ahead), where its frames are judged
    // afterwards as any others.
    for (bool reading = true;;) {
        {
            std::unique_lock lock(mutex_);
            if (!reading) ended_.wait(lock, [&] { return prepared_ || finished_; });
            if (prepared_ || finished_) break;
        }
        reading = read_ahead(c);
    }
    {
        std::unique_lock lock(mutex_);
        if (finished_) return;
        if (streams_.size() >= 128) throw std::runtime_error("a 129th stream at once (128 at most)");
        streams_.push_back(c.fd());
        ++carriers_;
        drained_ = false;  // a stream that came late: what is missing may be on it
    }
    carry_blocks(c, false);
    {
        std::lock_guard lock(mutex_);
        forget_stream(c.fd());
    }
    stream_ended();
}

// Left unread until the Have, a stream's receive window stayed at its first
// 64 KiB through those round trips, and TCP's ramp on a long path (slow
// start, the window's autotuning) began only then: on the 32 ms testbed
// path the tree's move first kept the machine busy 0.52 s after its start,
// 0.44 s with this (CHANGELOG.md, issue 22). A piece at a time is
// granted from the transfer's budget, so the streams together never hold
// more than kReadAheadBytes.
bool ReceiveTransfer::read_ahead(Channel& c) {
    constexpr std::size_t kPiece = 256u << 10;
    if (!c.readable(10)) return true;  // a grant is held only while bytes are taken, never while waiting
    std::size_t grant = 0;
    {
        std::lock_guard lock(mutex_);
        grant = std::min(kPiece, kReadAheadBytes - read_ahead_bytes_);
        if (grant == 0) {
            // Spent, unless another stream's grant is out: what its recv
            // does not take comes back in a moment (found by the unit test
            // under CI's load: a stream gave up short of the budget).
            if (read_ahead_grants_ == 0) return false;
        } else {
            read_ahead_bytes_ += grant;
            ++read_ahead_grants_;
        }
    }
    if (grant == 0) {
        std::this_thread::yield();
        return true;
    }
    const std::optional<std::size_t> took = c.read_ahead(grant);
    std::lock_guard lock(mutex_);
    read_ahead_bytes_ -= grant - took.value_or(0);
    --read_ahead_grants_;
    return took.has_value();
}

void ReceiveTransfer::stream_ended() {
    --carriers_;
    check_drained();
}

void ReceiveTransfer::slot_done() {
    --slots_pending_;
    check_drained();
}

// Done has come, every stream seen has stopped carrying blocks and every
// block handed over is written. With every file resolved the transfer ends.
// A file still missing may be on a stream the sender opened that has not
// reached this end yet (serve takes Hellos in turn, and under load a stream
// can join after the sender's Done): run_first_stream gives such streams
// late_streams_s, then fails what is missing, so a sender that says Done
// early holds the transfer no longer than that.
void ReceiveTransfer::check_drained() {
    {
        std::lock_guard lock(mutex_);
        if (finished_ || !done_seen_ || carriers_ > 0 || slots_pending_ > 0) return;
        if (resolved_ < files_.size()) {
            if (!drained_) drained_at_ = std::chrono::steady_clock::now();
            drained_ = true;
            return;
        }
    }
    maybe_finish();
}

std::string ReceiveTransfer::who() const {
    return fmt::format("transfer {:016x}{}", id_, settings_.peer.empty() ? "" : " from " + settings_.peer);
}

std::string ReceiveTransfer::problem() const {
    std::lock_guard lock(mutex_);
    return problem_;
}

void ReceiveTransfer::abort(const std::string& reason) {
    // A reason may quote the peer (a path of its manifest, its own words):
    // logged and kept only as printable text.
    const std::string why = printable(reason);
    bool ring = false;
    {
        // As in maybe_finish: the Error is out before stream 0 can hand its channel back.
        std::lock_guard send(control_send_);
        {
            std::lock_guard lock(mutex_);
            if (finished_) return;
            finished_ = true;
            problem_ = why;
            ring = prepared_;  // otherwise prepare() stops the ring it makes
        }
        spdlog::error("{}: {} stopped: {}; what was written stays for a resumed transfer", settings_.log_name,
                      who(), why);
        try {  // the sender learns why, if it is still there
            if (control_) write_frame(*control_, Frame{Kind::Error, id_}, why.data(), why.size());
        } catch (const std::exception&) {
        }
    }
    ended_.notify_all();
    if (ring) ring_->abort();
    // Wakes the other streams' readers. Under the lock: a stream leaves
    // streams_ before its descriptor is closed, so each listed is still its
    // own (a closed number may already be another connection's).
    std::lock_guard lock(mutex_);
    for (int fd : streams_) ::shutdown(fd, SHUT_RDWR);
}

void ReceiveTransfer::forget_stream(int fd) {
    streams_.erase(std::remove(streams_.begin(), streams_.end(), fd), streams_.end());
}

}  // namespace slabcast::mover
