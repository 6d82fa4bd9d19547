// The receiving side's first steps: the manifest taken off stream 0 (its size
// checked before a byte is kept), checked against what the host allows one
// transfer, and the destination prepared: what is in place already, what an
// earlier run left (the journal), free space, the directories, the ring, the
// writers; then the Have answer that tells the sender what to skip. One
// manifest up front and tagged blocks after it, with no per-file control
// messages: Balman et al., 2012, section 5.3.
#include "mover/manifest_wire.h"
#include "mover/receive_records.h"
#include "mover/receive_transfer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace slabcast::mover {
using nlohmann::json;

namespace {

std::string bytes_text(std::uint64_t n) {
    const double x = static_cast<double>(n);
    return n >= (1u << 30) ? fmt::format("{} bytes ({:.1f} GiB)", n, x / (1u << 30))
                           : fmt::format("{} bytes ({:.1f} MiB)", n, x / (1u << 20));
}

// A manifest's share of ReceiveLimits::manifests while it arrives, given
// back when it is whole (or not coming).
class ManifestShare {
public:
    explicit ManifestShare(std::shared_ptr<ByteBudget> budget) : budget_(std::move(budget)) {}
    ~ManifestShare() {
        if (budget_) budget_->give(held_);
    }
    ManifestShare(const ManifestShare&) = delete;
    ManifestShare& operator=(const ManifestShare&) = delete;
    void take(std::uint64_t n) {
        if (!budget_) return;
        if (!budget_->take(n))
            throw std::runtime_error(fmt::format("the manifests arriving hold {} bytes, the limit for all of them "
                                                 "(serve --max-transfers x --max-manifest-mb): try again later",
                                                 budget_->total()));
        held_ += n;
    }

private:
    std::shared_ptr<ByteBudget> budget_;
    std::uint64_t held_ = 0;
};

// Manifest bytes are kept as they arrive, this many at a time.
constexpr std::size_t kManifestPiece = 1u << 20;

}  // namespace

// The manifest must be whole within the manifest timeout (serve
// --peer-timeout) of the Hello, however its bytes are paced: until it is in,
// a transfer holds a thread, a connection and a slot of its address for
// nothing, and a timeout on each recv alone would let a client sending a
// byte a minute hold them for ever. A running transfer gets the idle
// timeout instead.
std::string ReceiveTransfer::take_manifest_in_time(Channel& c) {
    if (settings_.manifest_timeout_s <= 0) return take_manifest(c);
    c.set_deadline(std::chrono::steady_clock::now() + std::chrono::seconds(settings_.manifest_timeout_s));
    std::string manifest;
    try {
        manifest = take_manifest(c);
    } catch (const DeadlinePassed&) {
        throw std::runtime_error(fmt::format("no manifest: the client did not send it whole within {} s of its "
                                             "Hello (serve --peer-timeout), connection closed",
                                             settings_.manifest_timeout_s));
    }
    c.set_deadline(std::nullopt);
    return manifest;
}

// The manifest's frames, in order, to the size the first declares: that
// size is checked against --max-manifest-mb before a byte is kept, and every
// frame must continue where the last ended, within it, in the first one's
// encoding. Compressed, its expanded size is checked the same way
// (manifest_wire.h).
std::string ReceiveTransfer::take_manifest(Channel& c) {
    const std::uint64_t limit = settings_.limits.manifest_bytes;
    std::string manifest;
    std::uint64_t total = 0;
    std::uint32_t encoding = kManifestJson;
    ManifestShare share(settings_.limits.manifests);
    for (bool first = true; first || manifest.size() < total; first = false) {
        std::uint8_t header[kHeaderBytes];
        if (!c.read_full(header, sizeof header)) throw std::runtime_error("the sender left before its manifest");
        std::string why;
        const auto f = decode_header(header, &why);
        if (!f) throw std::runtime_error(why);
        if (f->kind == Kind::Error) throw std::runtime_error("the sender refused: " + read_message(c, *f));
        if (f->kind != Kind::Manifest)
            throw std::runtime_error(fmt::format("expected the manifest, not a {} frame", kind_name(f->kind)));
        if (f->transfer != id_) throw std::runtime_error("a manifest frame of another transfer (field 'transfer')");
        if (first) {
            encoding = f->file;
            total = f->extra;
            if (total == 0) throw std::runtime_error("an empty manifest (field 'extra' is 0)");
            if (total > limit)
                throw std::runtime_error(fmt::format("the manifest declares {} bytes (field 'extra'), above the "
                                                     "limit of {} bytes (serve --max-manifest-mb)", total, limit));
        } else if (f->extra != total) {
            throw std::runtime_error(fmt::format("the manifest's size (field 'extra') changed from {} to {}", total,
                                                 f->extra));
        } else if (f->file != encoding) {
            throw std::runtime_error(fmt::format("the manifest's encoding (field 'file') changed from {} to {}",
                                                 encoding, f->file));
        }
        const std::uint64_t at = manifest.size();
        if (f->offset != at)
            throw std::runtime_error(fmt::format("a manifest frame at offset {} (field 'offset'), where {} was next",
                                                 f->offset, at));
        if (f->length == 0 || f->length > total - at)
            throw std::runtime_error(fmt::format("a manifest frame of {} bytes (field 'length') where {} were left",
                                                 f->length, total - at));
        // Kept as its bytes arrive, a piece at a time, drawn from the budget
        // of all manifests arriving: a peer holds no more memory than it has sent.
        for (std::uint64_t got = 0; got < f->length;) {
            const std::size_t piece = std::min<std::uint64_t>(f->length - got, kManifestPiece);
            share.take(piece);
            manifest.resize(at + got + piece);
            if (!c.read_full(manifest.data() + at + got, piece))
                throw std::runtime_error("the sender left in the middle of its manifest");
            got += piece;
        }
        if (checksum(manifest.data() + at, f->length) != f->checksum)
            throw std::runtime_error("a manifest frame damaged in transit (checksum)");
    }
    return manifest_json(encoding, manifest, limit);
}

// What the host allows one transfer (ReceiveLimits), before anything is
// created: the counts here, free space in prepare().
void ReceiveTransfer::check_limits() const {
    const ReceiveLimits& l = settings_.limits;
    const std::uint64_t entries = manifest_.files.size() + manifest_.dirs.size();
    if (entries > l.entries)
        throw std::runtime_error(fmt::format("the manifest lists {} files and directories, above the limit of {} "
                                             "(serve --max-files)", entries, l.entries));
    std::uint64_t blocks = 0;
    for (const auto& f : manifest_.files)
        if (__builtin_add_overflow(blocks, blocks_of(f.size, manifest_.block), &blocks))
            blocks = std::numeric_limits<std::uint64_t>::max();
    if (blocks > l.blocks)
        throw std::runtime_error(fmt::format("the manifest declares {} blocks of {} bytes, above the limit of {} "
                                             "(serve --max-blocks)", blocks, manifest_.block, l.blocks));
}

void ReceiveTransfer::prepare(const std::string& manifest_text, Channel& control) {
    manifest_ = manifest_from_json(manifest_text);
    check_limits();
    const std::uint64_t block = manifest_.block;
    files_.resize(manifest_.files.size());

    // What the destination holds already, looked at before anything is
    // created: files in place, and part files with journaled blocks.
    std::unordered_map<std::string, std::uint32_t> index;
    std::vector<Journal::Version> versions;
    for (std::uint32_t i = 0; i < manifest_.files.size(); ++i) {
        index.emplace(path_of(i), i);
        versions.push_back(version_of(i));
    }
    const auto partial = Journal::read(tree_, prefix_, [&](const std::string& path) -> const Journal::Version* {
        const auto it = index.find(path);
        return it == index.end() ? nullptr : &versions[it->second];
    });
    json complete = json::array(), have_blocks = json::object();
    std::uint64_t need = 0;  // bytes still to be written (no wrap: manifest_from_json bounds the sum)
    // The Have is one frame of at most limits.have_bytes (kMaxHaveBytes: the
    // client reads no more). Each entry counts at its longest as JSON: a
    // file's index 10 digits and a comma, a file's key with its brackets 16
    // bytes, an offset 20 digits and a comma. What does not fit is not told,
    // and the sender sends it again (only slower): a journaled block is
    // written again, a file in place written again and renamed over itself.
    std::uint64_t have_bytes = 32;  // the braces and both names
    const auto have_room = [&](std::uint64_t n) {
        if (have_bytes + n > settings_.limits.have_bytes) return false;
        have_bytes += n;
        return true;
    };
    // Each directory looked up once, missing ones too: into a new
    // destination, a lookup per file was a failed openat2 per file.
    std::unordered_map<std::string, DestTree::Dir> dirs;
    for (std::uint32_t i = 0; i < manifest_.files.size(); ++i) {
        const ManifestFile& m = manifest_.files[i];
        FileState& f = files_[i];
        f.blocks = blocks_of(m.size, block);
        const auto [dir_path, name] = split_path(path_of(i));
        auto known_dir = dirs.find(dir_path);
        if (known_dir == dirs.end()) known_dir = dirs.emplace(dir_path, tree_.dir_if_exists(dir_path)).first;
        const DestTree::Dir& dir = known_dir->second;
        struct stat st {};
        const bool exists = dir && ::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        // Already in place, same size and time: as rsync's quick check.
        if (exists && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == m.size &&
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec == m.mtime_ns &&
            have_room(11)) {
            f.status = FileState::Status::Skipped;
            ++resolved_;
            complete.push_back(i);
            continue;
        }
        if (exists && S_ISDIR(st.st_mode))
            throw std::runtime_error(path_of(i) + ": a directory of that name is in the way (name collision)");
        need += m.size;
        // The journal counts only with the part file it describes still there.
        const auto known = partial.find(path_of(i));
        const std::string part = split_path(part_of(i)).second;
        f.part_ready = known != partial.end() && ::fstatat(dir->get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                       S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == m.size;
        if (!f.part_ready || known->second.blocks.empty()) continue;
        json offsets = json::array();
        f.seen.assign(f.blocks, false);
        f.sums.assign(f.blocks, 0);
        for (const auto& [off, sum] : known->second.blocks) {  // each a block of this file: Journal::read checked
            f.seen[off / block] = true;
            f.sums[off / block] = sum;
            ++f.blocks_seen;
            need -= std::min<std::uint64_t>(block, m.size - off);
            if (have_room(offsets.empty() ? 16 + 21 : 21)) offsets.push_back(off);
        }
        if (!offsets.empty()) have_blocks[std::to_string(i)] = offsets;
    }
    // Refused up front, as a disk-full check: the sizes declared, less what
    // is in place, against the free space of the destination (or its nearest
    // existing parent). Holes of sparse files count in full.
    DestTree::Dir dest;
    for (std::string at = prefix_; !(dest = tree_.dir_if_exists(at)); at = split_path(at).first) {
    }
    struct statvfs fs {};
    if (::fstatvfs(dest->get(), &fs) == 0) {
        std::uint64_t free = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(fs.f_bavail), static_cast<std::uint64_t>(fs.f_frsize),
                                   &free))
            free = std::numeric_limits<std::uint64_t>::max();
        if (need > free)
            throw std::runtime_error(fmt::format("the transfer needs {} more, and {} has {} free", bytes_text(need),
                                                 prefix_.empty() ? tree_.root() : tree_.root() + "/" + prefix_,
                                                 bytes_text(free)));
    }

    if (!prefix_.empty()) {  // the destination itself, one component at a time
        for (std::size_t end = 0; end != std::string::npos;) {
            end = prefix_.find('/', end + 1);
            tree_.make_dir(prefix_.substr(0, end), 0755);
        }
    }
    for (const auto& d : manifest_.dirs) tree_.make_dir(prefix_.empty() ? d.path : prefix_ + "/" + d.path, d.mode);
    journal_ = std::make_unique<Journal>(tree_, prefix_);
    spdlog::info("{}: transfer {:016x}: {} files ({:.1f} MiB) into {}/{}: {} already in place, {} resumed",
                 settings_.log_name, id_, manifest_.files.size(), static_cast<double>(manifest_.total_bytes()) / (1 << 20),
                 tree_.root(), prefix_, complete.size(), have_blocks.size());

    const std::size_t slot = manifest_.block + 4096;
    ring_ = std::make_unique<BlockRing>(std::max<std::size_t>(4, settings_.ring_bytes / slot), slot);
    {
        std::lock_guard lock(mutex_);
        if (finished_) {  // stopped while it was being prepared: abort() found no ring to stop
            ring_->abort();
            return;
        }
        prepared_ = true;
    }
    ended_.notify_all();  // streams that came while the manifest was taken (run_stream)
    {
        std::lock_guard lock(pool_mutex_);
        pool_open_ = true;
    }
    // Only --read-back hands records to writers (carry_blocks); without it
    // the streams finish files themselves, and a pool would only wait.
    if (settings_.read_back) set_writers(settings_.writers);
    const std::string have = json{{"complete", complete}, {"blocks", have_blocks}}.dump();
    std::lock_guard lock(control_send_);
    write_frame(control, Frame{Kind::Have, id_}, have.data(), have.size());
}

}  // namespace slabcast::mover
