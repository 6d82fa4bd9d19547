#include "mover/receive_transfer.h"

#include "mover/peer_text.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace slabcast::mover {
using nlohmann::json;

namespace {

// In a receiving slot each frame is a record: its header, the checksum of its
// payload taken as it arrived, then the payload, padded to 8 bytes.
constexpr std::size_t kRecordHead = kHeaderBytes + sizeof(std::uint64_t);

std::size_t record_bytes(std::size_t payload) { return kRecordHead + ((payload + 7) & ~std::size_t{7}); }

// The payload of an Error frame, which only a message may be (shown in logs
// and reports: peer_text.h).
std::string read_message(Channel& c, const Frame& f) {
    if (f.length > kMaxPeerText) return "(a message of " + std::to_string(f.length) + " bytes, not read)";
    std::string text(f.length, '\0');
    if (f.length && !c.read_full(text.data(), text.size()))
        throw std::runtime_error("the peer closed the connection in the middle of a frame");
    return printable(text);
}

const char* kind_name(Kind k) {
    switch (k) {
    case Kind::Hello: return "Hello";
    case Kind::Manifest: return "Manifest";
    case Kind::Have: return "Have";
    case Kind::Data: return "Data";
    case Kind::Zeros: return "Zeros";
    case Kind::FileEnd: return "FileEnd";
    case Kind::Done: return "Done";
    case Kind::Report: return "Report";
    case Kind::Bye: return "Bye";
    case Kind::Error: return "Error";
    case Kind::FileFailed: return "FileFailed";
    case Kind::Challenge: return "Challenge";
    case Kind::Proof: return "Proof";
    }
    return "unknown";
}

std::string bytes_text(std::uint64_t n) {
    const double x = static_cast<double>(n);
    return n >= (1u << 30) ? fmt::format("{} bytes ({:.1f} GiB)", n, x / (1u << 30))
                           : fmt::format("{} bytes ({:.1f} MiB)", n, x / (1u << 20));
}

}  // namespace

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

// The manifest's frames, in order, to the size the first declares: that
// size is checked against --max-manifest-mb before a byte is kept, and every
// frame must continue where the last ended, within it.
std::string ReceiveTransfer::take_manifest(Channel& c) {
    const std::uint64_t limit = settings_.limits.manifest_bytes;
    std::string manifest;
    std::uint64_t total = 0;
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
            total = f->extra;
            if (total == 0) throw std::runtime_error("an empty manifest (field 'extra' is 0)");
            if (total > limit)
                throw std::runtime_error(fmt::format("the manifest declares {} bytes (field 'extra'), above the "
                                                     "limit of {} bytes (serve --max-manifest-mb)", total, limit));
        } else if (f->extra != total) {
            throw std::runtime_error(fmt::format("the manifest's size (field 'extra') changed from {} to {}", total,
                                                 f->extra));
        }
        const std::uint64_t at = manifest.size();
        if (f->offset != at)
            throw std::runtime_error(fmt::format("a manifest frame at offset {} (field 'offset'), where {} was next",
                                                 f->offset, at));
        if (f->length == 0 || f->length > total - at)
            throw std::runtime_error(fmt::format("a manifest frame of {} bytes (field 'length') where {} were left",
                                                 f->length, total - at));
        manifest.resize(at + f->length);
        if (!c.read_full(manifest.data() + at, f->length))
            throw std::runtime_error("the sender left in the middle of its manifest");
        if (checksum(manifest.data() + at, f->length) != f->checksum)
            throw std::runtime_error("a manifest frame damaged in transit (checksum)");
    }
    return manifest;
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
    for (std::uint32_t i = 0; i < manifest_.files.size(); ++i) {
        const ManifestFile& m = manifest_.files[i];
        FileState& f = files_[i];
        f.blocks = blocks_of(m.size, block);
        const auto [dir_path, name] = split_path(path_of(i));
        const DestTree::Dir dir = tree_.dir_if_exists(dir_path);
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
    {
        std::lock_guard lock(pool_mutex_);
        pool_open_ = true;
    }
    set_writers(settings_.writers);
    const std::string have = json{{"complete", complete}, {"blocks", have_blocks}}.dump();
    std::lock_guard lock(control_send_);
    write_frame(control, Frame{Kind::Have, id_}, have.data(), have.size());
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
        prepare(take_manifest(c), c);
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
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        // Before the manifest is taken there is no ring and no file to write to.
        if (!prepared_) throw std::runtime_error("a stream joined the transfer before its manifest was taken");
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

// What makes a frame illegal while blocks arrive, checked on the stream as
// it arrives, before anything of it is kept: every field a writer will use
// to index, size or offset anything is within the manifest.
std::string ReceiveTransfer::frame_problem(const Frame& f) const {
    switch (f.kind) {
    case Kind::Data:
    case Kind::Zeros:
    case Kind::FileEnd:
    case Kind::FileFailed: break;
    default: return fmt::format("a {} frame in the middle of the transfer", kind_name(f.kind));
    }
    const char* kind = kind_name(f.kind);
    if (f.file >= files_.size())
        return fmt::format("a {} frame for file {} (field 'file'), but the manifest lists {} files", kind, f.file,
                           files_.size());
    if (f.length > manifest_.block)
        return fmt::format("a {} frame of {} bytes (field 'length'), more than the block size {}", kind, f.length,
                           manifest_.block);
    if (f.kind != Kind::Data && f.kind != Kind::Zeros) return {};
    const ManifestFile& m = manifest_.files[f.file];
    const std::uint64_t block = manifest_.block;
    if (f.offset % block != 0 || f.offset >= m.size)
        return fmt::format("a {} frame at offset {} (field 'offset') of '{}', which has {} bytes in blocks of {}", kind,
                           f.offset, m.path, m.size, block);
    const std::uint64_t expected = std::min<std::uint64_t>(block, m.size - f.offset);
    const std::uint64_t length = f.kind == Kind::Data ? f.length : f.extra;
    if (length != expected)
        return fmt::format("a {} frame of {} bytes (field '{}') at offset {} of '{}', whose block there holds {}", kind,
                           length, f.kind == Kind::Data ? "length" : "extra", f.offset, m.path, expected);
    return {};
}

// The back end of one stream: frames off the socket into ring slots. A whole
// block fills a slot of its own, its payload page-aligned as it was read; small
// frames (small files, their ends) share a slot for as long as more of them are
// already waiting on the socket, so that ten thousand small files cost the
// writers a few hundred hand-overs, not twenty thousand. A slot is handed over
// as soon as nothing more is waiting: no frame sits in it for want of the next.
void ReceiveTransfer::carry_blocks(Channel& c, bool first) {
    Slot* slot = nullptr;  // being filled
    auto hand_over = [&] {
        if (!slot) return;
        ++slots_pending_;
        ring_->put_full(slot);
        slot = nullptr;
    };
    try {
        for (;;) {
            std::uint8_t header[kHeaderBytes];
            if (!c.read_full(header, sizeof header)) {
                if (!finished_) abort("a stream closed without saying goodbye (the sender was stopped or lost)");
                break;
            }
            std::string problem;
            const auto f = decode_header(header, &problem);
            if (!f) throw std::runtime_error(problem);
            if (f->transfer != id_) throw std::runtime_error("a frame of another transfer (field 'transfer')");
            if (f->kind == Kind::Bye) {
                // The first stream ends with Done: a Bye there would leave the
                // transfer waiting for a Done that never comes (fuzz_mover_receive).
                if (first) throw std::runtime_error("a Bye frame on the first stream, which ends with Done");
                break;
            }
            if (f->kind == Kind::Error) {
                const std::string why = read_message(c, *f);
                // The sender turned down this one stream (it came after the last
                // block, say): the transfer goes on without it.
                if (!first) break;
                throw std::runtime_error("the sender stopped the transfer: " + why);
            }
            if (f->kind == Kind::Done) {
                if (!first) throw std::runtime_error("Done on a stream other than the first");
                if (f->extra != files_.size())
                    throw std::runtime_error(fmt::format("Done counts {} files (field 'extra'), the manifest lists {}",
                                                         f->extra, files_.size()));
                hand_over();
                std::lock_guard lock(mutex_);
                done_seen_ = true;
                break;  // nothing more comes on the first stream; the rest may still be on the others
            }
            if (const std::string why = frame_problem(*f); !why.empty()) throw std::runtime_error(why);
            const bool whole_block = f->length == manifest_.block;
            const std::size_t need = record_bytes(f->length);
            if (slot && (whole_block || slot->used + need > slot->capacity)) hand_over();
            if (!slot) {
                for (;;) {
                    const auto r = ring_->take_free(slot, 200);
                    if (r == BlockRing::Take::Got) break;
                    if (r == BlockRing::Take::Closed || finished_) return;
                }
                slot->begin = slot->used = whole_block ? 4096 - kRecordHead : 0;
            }
            std::uint8_t* record = slot->data + slot->used;
            std::uint8_t* payload = record + kRecordHead;
            std::memcpy(record, header, kHeaderBytes);
            RunningChecksum sum;
            for (std::size_t at = 0; at < f->length;) {
                const std::size_t n = std::min<std::size_t>(kCachePiece, f->length - at);
                if (!c.read_full(payload + at, n)) throw std::runtime_error("the peer closed the connection in the middle of a frame");
                sum.add(payload + at, n);  // while the piece is still in cache
                at += n;
            }
            const std::uint64_t value = sum.value();
            std::memcpy(record + kHeaderBytes, &value, sizeof value);
            slot->used += need;
            if (whole_block || c.waiting() < kHeaderBytes) hand_over();
        }
        hand_over();  // what came before a goodbye is good
    } catch (const std::exception& e) {
        if (slot) ring_->put_free(slot);  // the transfer stops: its frames are not written
        if (!finished_) abort(std::string("stream: ") + e.what());
    }
}

void ReceiveTransfer::set_writers(int n) {
    std::lock_guard lock(pool_mutex_);
    settings_.writers = n;
    if (!pool_open_) return;  // no ring yet: the pool starts at this size when the transfer is prepared
    while (static_cast<int>(writers_.size()) < n) {
        writer_quit_.push_back(std::make_unique<std::atomic<bool>>(false));
        writers_.emplace_back(&ReceiveTransfer::writer_loop, this, writer_quit_.back().get());
    }
    while (static_cast<int>(writers_.size()) > n) {
        *writer_quit_.back() = true;
        writers_.back().join();
        writers_.pop_back();
        writer_quit_.pop_back();
    }
}

void ReceiveTransfer::writer_loop(const std::atomic<bool>* quit) {
    while (!*quit) {
        Slot* slot = nullptr;
        const auto r = ring_->take_full(slot, 200);
        if (r == BlockRing::Take::Closed) return;
        if (r == BlockRing::Take::Timeout) continue;
        // Its records, as carry_blocks laid them out (and checked).
        for (std::size_t at = slot->begin; at < slot->used && !finished_;) {
            const std::uint8_t* record = slot->data + at;
            const auto f = decode_header(record);
            if (!f) break;
            std::uint64_t sum;
            std::memcpy(&sum, record + kHeaderBytes, sizeof sum);
            try {
                handle(*f, record + kRecordHead, sum);
            } catch (const std::exception& e) {
                abort(e.what());
            }
            at += record_bytes(f->length);
        }
        ring_->put_free(slot);
        slot_done();
    }
}

void ReceiveTransfer::handle(const Frame& f, const std::uint8_t* payload, std::uint64_t payload_sum) {
    FileState& file = files_[f.file];  // every field was checked as the frame arrived (frame_problem)
    const ManifestFile& m = manifest_.files[f.file];
    switch (f.kind) {
    case Kind::Data:
    case Kind::Zeros: {
        const std::uint64_t length = f.kind == Kind::Data ? f.length : f.extra;
        const std::uint64_t sum = f.kind == Kind::Data ? payload_sum : zeros_checksum(length);
        if (sum != f.checksum) {
            fail_file(f.file, "block at offset " + std::to_string(f.offset) + " damaged in transit");
            return;
        }
        if (f.kind == Kind::Data) {
            std::shared_ptr<UniqueFd> fd;
            {
                std::lock_guard lock(mutex_);
                if (file.status != FileState::Status::Waiting) return;  // failed already, in place, or whole
                fd = open_part(f.file);
            }
            for (std::uint64_t done = 0; done < length;) {
                const ssize_t w = ::pwrite(fd->get(), payload + done, length - done, static_cast<off_t>(f.offset + done));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0)
                    throw std::runtime_error(tree_.root() + "/" + path_of(f.file) + ": cannot write: " +
                                             std::strerror(w < 0 ? errno : ENOSPC));
                done += static_cast<std::uint64_t>(w);
            }
            bytes_written_ += length;
        }  // Zeros: the part file is sized with ftruncate, the hole reads as zeros already
        journal_->block_written(path_of(f.file), version_of(f.file), f.offset, sum);
        block_arrived(f.file, f.offset, sum);
        return;
    }
    case Kind::FileEnd: {
        if (f.extra != m.size) {
            fail_file(f.file, "its size changed while it was sent");
            return;
        }
        bool whole = false;
        {
            std::lock_guard lock(mutex_);
            if (file.status != FileState::Status::Waiting) return;
            file.end_seen = true;
            file.checksum = f.checksum;
            whole = file.blocks_seen == file.blocks;
            if (whole) file.status = FileState::Status::Finishing;
        }
        if (whole) finish_file(f.file);
        return;
    }
    case Kind::FileFailed:
        fail_file(f.file, "the sender could not read it: " +
                              printable({reinterpret_cast<const char*>(payload), f.length}));
        return;
    default:
        return;  // carry_blocks lets no other kind into the ring
    }
}

void ReceiveTransfer::block_arrived(std::uint32_t index, std::uint64_t offset, std::uint64_t sum) {
    bool whole = false;
    {
        std::lock_guard lock(mutex_);
        FileState& f = files_[index];
        if (f.status != FileState::Status::Waiting) return;
        if (f.sums.empty()) {  // its first block: only now its per-block state
            f.seen.assign(f.blocks, false);
            f.sums.assign(f.blocks, 0);
        }
        const std::uint64_t b = offset / manifest_.block;  // < f.blocks: frame_problem checked the offset
        f.sums[b] = sum;
        if (!f.seen[b]) {  // not a resent block
            f.seen[b] = true;
            ++f.blocks_seen;
        }
        whole = f.end_seen && f.blocks_seen == f.blocks;
        if (whole) f.status = FileState::Status::Finishing;
    }
    if (whole) finish_file(index);
}

// Opens the file's part file (creating and sizing it the first time), and
// closes the oldest open one beyond kOpenPartFiles: a transfer with blocks
// of a million files in flight must not hold a million descriptors.
std::shared_ptr<UniqueFd> ReceiveTransfer::open_part(std::uint32_t index) {
    FileState& f = files_[index];
    if (f.fd) return f.fd;
    const std::string part = part_of(index);
    UniqueFd fd = f.part_ready ? tree_.open_file(part, O_RDWR) : tree_.open_file(part, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (!f.part_ready && ::ftruncate(fd.get(), static_cast<off_t>(manifest_.files[index].size)) != 0)
        throw std::runtime_error(tree_.root() + "/" + part + ": cannot size it: " + std::strerror(errno));
    f.part_ready = true;
    f.fd = std::make_shared<UniqueFd>(std::move(fd));
    open_order_.push_back(index);
    ++open_parts_;
    while (!open_order_.empty() && (open_parts_ > kOpenPartFiles || !files_[open_order_.front()].fd)) {
        FileState& old = files_[open_order_.front()];
        open_order_.pop_front();
        if (old.fd) {  // a writer using it keeps it open until it is done with it
            old.fd.reset();
            --open_parts_;
        }
    }
    return f.fd;
}

// The file is whole: its checksum, made of the checksums of the blocks that
// arrived (each verified against its bytes) and of those journaled by an
// earlier run, must be the sender's, made of the blocks it read. Only then is
// it moved into place. (Finishing: no other thread touches its blocks' state.)
void ReceiveTransfer::finish_file(std::uint32_t index) {
    FileState& f = files_[index];
    const ManifestFile& m = manifest_.files[index];
    std::shared_ptr<UniqueFd> fd;
    {
        std::lock_guard lock(mutex_);
        fd = open_part(index);
    }
    const bool sums_match = file_checksum(f.sums.data(), f.sums.size()) == f.checksum;
    if (!sums_match || (settings_.read_back && !read_back_matches(index, fd->get()))) {
        // Its blocks are not to be trusted for a resume either: the part file goes.
        ::unlinkat(tree_.parent(path_of(index))->get(), split_path(part_of(index)).second.c_str(), 0);
        fail_file(index, sums_match ? "read back, it differs from what was received (the storage changed it)"
                                    : "checksum of the whole file differs from the sender's");
        return;
    }
    // Times before 1970 are negative: the nanoseconds must still be 0..1e9-1.
    std::int64_t seconds = m.mtime_ns / 1'000'000'000, nanoseconds = m.mtime_ns % 1'000'000'000;
    if (nanoseconds < 0) {
        nanoseconds += 1'000'000'000;
        --seconds;
    }
    timespec times[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(seconds), static_cast<long>(nanoseconds)}};
    ::fchmod(fd->get(), m.mode);
    ::futimens(fd->get(), times);
    const std::string part = split_path(part_of(index)).second, name = split_path(path_of(index)).second;
    const DestTree::Dir dir = tree_.parent(path_of(index));
    if (::renameat(dir->get(), part.c_str(), dir->get(), name.c_str()) != 0) {
        fail_file(index, std::string("cannot move it into place: ") + std::strerror(errno));
        return;
    }
    {
        std::lock_guard lock(mutex_);
        resolve(f, FileState::Status::Done);
    }
    maybe_finish();
}

// --read-back: every block as it is on the storage now, against its checksum.
bool ReceiveTransfer::read_back_matches(std::uint32_t index, int fd) {
    const FileState& f = files_[index];
    const std::uint64_t size = manifest_.files[index].size, block = manifest_.block;
    thread_local std::vector<std::uint8_t> buf;  // once per writer thread, not per file
    buf.resize(block);
    for (std::uint64_t b = 0; b < f.blocks; ++b) {
        const std::size_t len = static_cast<std::size_t>(std::min(block, size - b * block));
        std::size_t got = 0;
        while (got < len) {
            const ssize_t n = ::pread(fd, buf.data() + got, len - got, static_cast<off_t>(b * block + got));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            got += static_cast<std::size_t>(n);
        }
        if (checksum(buf.data(), len) != f.sums[b]) return false;
    }
    return true;
}

void ReceiveTransfer::resolve(FileState& f, FileState::Status status) {
    f.status = status;
    if (f.fd) {
        f.fd.reset();
        --open_parts_;
    }
    std::vector<bool>().swap(f.seen);  // its per-block state is no longer needed
    std::vector<std::uint64_t>().swap(f.sums);
    ++resolved_;
}

void ReceiveTransfer::fail_file(std::uint32_t index, const std::string& why) {
    {
        std::lock_guard lock(mutex_);
        FileState& f = files_[index];
        if (f.status != FileState::Status::Waiting && f.status != FileState::Status::Finishing) return;
        f.problem = why;
        resolve(f, FileState::Status::Failed);
    }
    spdlog::warn("{}: transfer {:016x}: {}: {}", settings_.log_name, id_, path_of(index), why);
    maybe_finish();
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

void ReceiveTransfer::maybe_finish() {
    // The end is decided under control_send_ too, and the report written
    // before it is let go: stream 0 hands its channel back to serve
    // (run_first_stream) only then, and the report must not find it gone.
    std::unique_lock send(control_send_);
    json failed = json::array();
    std::uint64_t done = 0, skipped = 0;
    {
        std::lock_guard lock(mutex_);
        if (finished_ || !done_seen_ || resolved_ < files_.size()) return;
        finished_ = true;
        for (std::uint32_t i = 0; i < files_.size(); ++i) {
            const FileState& f = files_[i];
            if (f.status == FileState::Status::Failed) failed.push_back({{"path", manifest_.files[i].path}, {"why", f.problem}});
            done += f.status == FileState::Status::Done;
            skipped += f.status == FileState::Status::Skipped;
        }
        succeeded_ = failed.empty();
        if (!failed.empty())
            problem_ = std::to_string(failed.size()) + " file(s) failed, " + failed[0]["path"].get<std::string>() +
                       ": " + failed[0]["why"].get<std::string>();
    }
    // The transfer has ended, whatever the steps below meet: its streams and
    // writers are let go in any case (a throw here once left stream 0 waiting
    // for ever, found by fuzz_mover_receive).
    try {
        // Directory modes last (a read-only directory would have refused its
        // files), children before parents, each through a descriptor opened
        // beneath the root: fchmodat by name would follow a symbolic link put in
        // the directory's place, and change a directory outside the tree.
        for (auto d = manifest_.dirs.rbegin(); d != manifest_.dirs.rend(); ++d) {
            const std::string path = prefix_.empty() ? d->path : prefix_ + "/" + d->path;
            const UniqueFd dir(tree_.open_dir(path));
            if (dir.get() < 0 || ::fchmod(dir.get(), d->mode) != 0)
                spdlog::warn("{}: transfer {:016x}: {}/{}: its mode is not set: {}", settings_.log_name, id_,
                             tree_.root(), path, std::strerror(errno));
        }
        if (succeeded_) journal_->remove();
        // A sender's reason for a file is its own bytes, not always UTF-8: replaced, never a throw.
        const std::string report = json{{"files", done}, {"in_place", skipped}, {"failed", failed},
                                        {"bytes_written", bytes_written_.load()}}
                                       .dump(-1, ' ', false, json::error_handler_t::replace);
        spdlog::info("{}: transfer {:016x} done: {} files written, {} already in place, {} failed; {} bytes written",
                     settings_.log_name, id_, done, skipped, failed.size(), bytes_written_.load());
        if (control_) write_frame(*control_, Frame{Kind::Report, id_}, report.data(), report.size());
    } catch (const std::exception& e) {
        spdlog::warn("{}: transfer {:016x}: cannot send the report: {}", settings_.log_name, id_, e.what());
    }
    send.unlock();
    ring_->abort();
    ended_.notify_all();
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
        spdlog::error("{}: transfer {:016x} stopped: {}; what was written stays for a resumed transfer",
                      settings_.log_name, id_, why);
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
