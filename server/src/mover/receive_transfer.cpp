#include "mover/receive_transfer.h"

#include "mover/stream_io.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast::mover {
using nlohmann::json;

ReceiveTransfer::ReceiveTransfer(std::uint64_t id, const std::string& root, std::string prefix,
                                 ReceiveSettings settings)
    : id_(id), tree_(root), prefix_(std::move(prefix)), settings_(settings) {}

ReceiveTransfer::~ReceiveTransfer() {
    if (ring_) ring_->abort();
    set_writers(0);
    for (auto& f : files_)
        if (f.fd >= 0) ::close(f.fd);
}

std::string ReceiveTransfer::path_of(std::uint32_t file) const {
    return prefix_.empty() ? manifest_.files[file].path : prefix_ + "/" + manifest_.files[file].path;
}

// Written under a hidden name next to its final one, and renamed only once
// verified: a reader of the destination never sees half a file.
std::string ReceiveTransfer::part_of(std::uint32_t file) const {
    const auto [dir, name] = split_path(path_of(file));
    return (dir.empty() ? "" : dir + "/") + "." + name + ".slabcast-part";
}

void ReceiveTransfer::prepare(const std::string& manifest_text, int control_fd) {
    manifest_ = manifest_from_json(manifest_text);
    if (!prefix_.empty()) {  // the destination itself, one component at a time
        std::string at;
        for (std::size_t start = 0; start <= prefix_.size();) {
            std::size_t end = prefix_.find('/', start);
            if (end == std::string::npos) end = prefix_.size();
            at += (at.empty() ? "" : "/") + prefix_.substr(start, end - start);
            tree_.make_dir(at, 0755);
            start = end + 1;
        }
    }
    for (const auto& d : manifest_.dirs) tree_.make_dir(prefix_.empty() ? d.path : prefix_ + "/" + d.path, d.mode);
    journal_ = std::make_unique<Journal>(tree_, prefix_);
    const auto partial = journal_->load();

    json complete = json::array(), have_blocks = json::object();
    files_.resize(manifest_.files.size());
    const std::uint64_t block = manifest_.block;
    for (std::uint32_t i = 0; i < manifest_.files.size(); ++i) {
        const ManifestFile& m = manifest_.files[i];
        FileState& f = files_[i];
        f.blocks = (m.size + block - 1) / block;
        f.seen.assign(f.blocks, false);
        f.sums.assign(f.blocks, 0);
        const auto [dir, name] = split_path(path_of(i));
        const int dir_fd = tree_.parent_fd(path_of(i));
        // Already in place, same size and time: as rsync's quick check.
        struct stat st {};
        if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            static_cast<std::uint64_t>(st.st_size) == m.size &&
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec == m.mtime_ns) {
            f.status = FileState::Status::Skipped;
            ++resolved_;
            complete.push_back(i);
            continue;
        }
        if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            throw std::runtime_error(path_of(i) + ": a directory of that name is in the way (name collision)");
        const auto known = partial.find(path_of(i));
        // The journal counts only with the part file it describes still there.
        const std::string part = split_path(part_of(i)).second;
        f.resume = known != partial.end() && known->second.size == m.size && known->second.mtime_ns == m.mtime_ns &&
                   known->second.block == manifest_.block &&
                   ::fstatat(dir_fd, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                   static_cast<std::uint64_t>(st.st_size) == m.size;
        if (f.resume) {
            json offsets = json::array();
            for (const auto& [off, sum] : known->second.blocks)
                if (off % block == 0 && off / block < f.blocks && !f.seen[off / block]) {
                    f.seen[off / block] = true;
                    f.sums[off / block] = sum;
                    ++f.blocks_seen;
                    offsets.push_back(off);
                }
            if (!offsets.empty()) have_blocks[std::to_string(i)] = offsets;
        }
    }
    const std::string have = json{{"complete", complete}, {"blocks", have_blocks}}.dump();
    spdlog::info("{}: transfer {:016x}: {} files ({:.1f} MiB) into {}/{}: {} already in place, {} resumed",
                 settings_.log_name, id_, manifest_.files.size(), static_cast<double>(manifest_.total_bytes()) / (1 << 20), tree_.root(),
                 prefix_, complete.size(), have_blocks.size());

    const std::size_t slot = manifest_.block + 4096;
    ring_ = std::make_unique<BlockRing>(std::max<std::size_t>(4, settings_.ring_bytes / slot), slot);
    set_writers(settings_.writers);
    std::lock_guard lock(control_send_);
    write_frame(control_fd, Frame{Kind::Have, id_}, have.data(), have.size());
    prepared_ = true;
}

void ReceiveTransfer::run_first_stream(int fd) {
    control_fd_ = fd;
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;  // stopped before it began (a pull given up while connecting)
        streams_.push_back(fd);
    }
    try {
        std::string manifest, payload;
        Frame f;
        std::uint64_t total = 0;
        do {
            if (!read_frame(fd, f, payload)) throw std::runtime_error("the sender left before its manifest");
            if (f.kind == Kind::Error) throw std::runtime_error("the sender refused: " + payload);
            if (f.kind != Kind::Manifest) throw std::runtime_error("expected the manifest");
            if (checksum(payload.data(), payload.size()) != f.checksum) throw std::runtime_error("manifest checksum");
            if (f.offset != manifest.size() || f.extra > (1u << 30)) throw std::runtime_error("manifest out of order");
            total = f.extra;
            manifest += payload;
        } while (manifest.size() < total);
        prepare(manifest, fd);
    } catch (const std::exception& e) {
        abort(e.what());  // tells the sender why
        return;
    }
    maybe_finish();  // nothing to send (all in place) is a finished transfer too
    carry_blocks(fd, true);
}

void ReceiveTransfer::run_stream(int fd) {
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        if (streams_.size() >= 128) {
            spdlog::warn("{}: transfer {:016x}: a 129th stream refused", settings_.log_name, id_);
            return;
        }
        streams_.push_back(fd);
    }
    carry_blocks(fd, false);
}

namespace {

// In a receiving slot each frame is a record: its header, the checksum of its
// payload taken as it arrived, then the payload, padded to 8 bytes.
constexpr std::size_t kRecordHead = kHeaderBytes + sizeof(std::uint64_t);

std::size_t record_bytes(std::size_t payload) { return kRecordHead + ((payload + 7) & ~std::size_t{7}); }

// Bytes already waiting on the socket (0 if it cannot tell).
std::size_t bytes_waiting(int fd) {
    int n = 0;
    return ::ioctl(fd, FIONREAD, &n) == 0 && n > 0 ? static_cast<std::size_t>(n) : 0;
}

}  // namespace

// The back end of one stream: frames off the socket into ring slots. A whole
// block fills a slot of its own, its payload page-aligned as it was read; small
// frames (small files, their ends) share a slot for as long as more of them are
// already waiting on the socket, so that ten thousand small files cost the
// writers a few hundred hand-overs, not twenty thousand. A slot is handed over
// as soon as nothing more is waiting: no frame sits in it for want of the next.
void ReceiveTransfer::carry_blocks(int fd, bool first) {
    Slot* slot = nullptr;  // being filled
    auto hand_over = [&] {
        if (slot) ring_->put_full(slot);
        slot = nullptr;
    };
    try {
        for (;;) {
            std::uint8_t header[kHeaderBytes];
            if (!read_full(fd, header, sizeof header)) {
                if (!finished_) abort("a stream closed without saying goodbye (the sender was stopped or lost)");
                break;
            }
            std::string problem;
            const auto f = decode_header(header, &problem);
            if (!f) throw std::runtime_error(problem);
            if (f->transfer != id_) throw std::runtime_error("a frame of another transfer");
            if (f->kind == Kind::Bye) break;
            // The sender turned down this one stream (it came after the last
            // block, say): the transfer goes on without it. A transfer that
            // stops says so on the first stream.
            if (f->kind == Kind::Error && !first) break;
            if (f->kind == Kind::Done) {
                if (!first) throw std::runtime_error("Done on a stream other than the first");
                hand_over();
                {
                    std::lock_guard lock(mutex_);
                    done_seen_ = true;
                }
                maybe_finish();
                continue;
            }
            if (f->kind != Kind::Data && f->kind != Kind::Zeros && f->kind != Kind::FileEnd && f->kind != Kind::FileFailed)
                throw std::runtime_error("unexpected frame kind during the transfer");
            if (f->length > manifest_.block) throw std::runtime_error("a block larger than the transfer's block size");
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
                if (!read_full(fd, payload + at, n)) throw std::runtime_error("the peer closed the connection in the middle of a frame");
                sum.add(payload + at, n);  // while the piece is still in cache
                at += n;
            }
            const std::uint64_t value = sum.value();
            std::memcpy(record + kHeaderBytes, &value, sizeof value);
            slot->used += need;
            if (whole_block || bytes_waiting(fd) < kHeaderBytes) hand_over();
        }
        hand_over();  // what came before a goodbye is good
    } catch (const std::exception& e) {
        if (slot) ring_->put_free(slot);  // the transfer stops: its frames are not written
        if (!finished_) abort(std::string("stream: ") + e.what());
    }
}

void ReceiveTransfer::set_writers(int n) {
    std::lock_guard lock(pool_mutex_);
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
        // Its records, as carry_blocks laid them out (checked there).
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
    }
}

void ReceiveTransfer::handle(const Frame& f, const std::uint8_t* payload, std::uint64_t payload_sum) {
    if (f.file >= files_.size()) throw std::runtime_error("a block of file " + std::to_string(f.file) + ", not in the manifest");
    FileState& file = files_[f.file];
    const ManifestFile& m = manifest_.files[f.file];
    {
        std::lock_guard lock(mutex_);
        if (file.status != FileState::Status::Waiting) return;  // failed already, or in place
    }
    switch (f.kind) {
    case Kind::Data:
    case Kind::Zeros: {
        const std::uint64_t length = f.kind == Kind::Data ? f.length : f.extra;
        if (f.offset % manifest_.block != 0 || f.offset >= m.size || length != std::min<std::uint64_t>(manifest_.block, m.size - f.offset))
            throw std::runtime_error(m.path + ": a block outside the file");
        const std::uint64_t sum = f.kind == Kind::Data ? payload_sum : zeros_checksum(length);
        if (sum != f.checksum) {
            fail_file(f.file, "block at offset " + std::to_string(f.offset) + " damaged in transit");
            return;
        }
        if (f.kind == Kind::Data) {
            for (std::uint64_t done = 0; done < length;) {
                const ssize_t w = ::pwrite(fd_of(f.file), payload + done, length - done, static_cast<off_t>(f.offset + done));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0)
                    throw std::runtime_error(tree_.root() + "/" + path_of(f.file) + ": cannot write: " +
                                             std::strerror(w < 0 ? errno : ENOSPC));
                done += static_cast<std::uint64_t>(w);
            }
            bytes_written_ += length;
        }  // Zeros: the file was sized with ftruncate, the hole reads as zeros already
        journal_->block_written(path_of(f.file), m.size, m.mtime_ns, manifest_.block, f.offset, sum);
        file.sums[f.offset / manifest_.block] = sum;  // each block has one slot, written by one writer
        block_arrived(f.file, f.offset, length);
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
            file.end_seen = true;
            file.checksum = f.checksum;
            whole = file.blocks_seen == file.blocks;
        }
        if (whole) finish_file(f.file);
        return;
    }
    case Kind::FileFailed:
        fail_file(f.file, std::string("the sender could not read it: ") +
                              std::string(reinterpret_cast<const char*>(payload), f.length));
        return;
    default:
        throw std::runtime_error("unexpected frame");
    }
}

void ReceiveTransfer::block_arrived(std::uint32_t file, std::uint64_t offset, std::uint64_t) {
    bool whole = false;
    {
        std::lock_guard lock(mutex_);
        FileState& f = files_[file];
        const std::uint64_t index = offset / manifest_.block;
        if (f.seen[index]) return;  // a resent block
        f.seen[index] = true;
        ++f.blocks_seen;
        whole = f.end_seen && f.blocks_seen == f.blocks;
    }
    if (whole) finish_file(file);
}

int ReceiveTransfer::fd_of(std::uint32_t index) {
    std::lock_guard lock(mutex_);
    FileState& f = files_[index];
    if (f.fd >= 0) return f.fd;
    const std::string part = part_of(index);
    f.fd = f.resume ? tree_.open_file(part, O_RDWR) : tree_.open_file(part, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (f.fd < 0 || (!f.resume && ::ftruncate(f.fd, static_cast<off_t>(manifest_.files[index].size)) != 0))
        throw std::runtime_error(tree_.root() + "/" + part + ": " + std::strerror(errno));
    return f.fd;
}

// The file is whole: its checksum, made of the checksums of the blocks that
// arrived (each verified against its bytes) and of those journaled by an
// earlier run, must be the sender's, made of the blocks it read. Only then is
// it moved into place.
void ReceiveTransfer::finish_file(std::uint32_t index) {
    FileState& f = files_[index];
    const ManifestFile& m = manifest_.files[index];
    const int fd = fd_of(index);
    const bool sums_match = file_checksum(f.sums.data(), f.sums.size()) == f.checksum;
    if (!sums_match || (settings_.read_back && !read_back_matches(index))) {
        // Its blocks are not to be trusted for a resume either: the part file goes.
        ::unlinkat(tree_.parent_fd(path_of(index)), split_path(part_of(index)).second.c_str(), 0);
        fail_file(index, sums_match ? "read back, it differs from what was received (the storage changed it)"
                                    : "checksum of the whole file differs from the sender's");
        return;
    }
    timespec times[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(m.mtime_ns / 1'000'000'000), static_cast<long>(m.mtime_ns % 1'000'000'000)}};
    ::fchmod(fd, m.mode);
    ::futimens(fd, times);
    const std::string part = split_path(part_of(index)).second, name = split_path(path_of(index)).second;
    const int dir = tree_.parent_fd(path_of(index));
    if (::renameat(dir, part.c_str(), dir, name.c_str()) != 0) {
        fail_file(index, std::string("cannot move it into place: ") + std::strerror(errno));
        return;
    }
    {
        std::lock_guard lock(mutex_);
        ::close(f.fd);
        f.fd = -1;
        f.status = FileState::Status::Done;
        ++resolved_;
    }
    maybe_finish();
}

// --read-back: every block as it is on the storage now, against its checksum.
bool ReceiveTransfer::read_back_matches(std::uint32_t index) {
    const FileState& f = files_[index];
    const std::uint64_t size = manifest_.files[index].size, block = manifest_.block;
    thread_local std::vector<std::uint8_t> buf;  // once per writer thread, not per file
    buf.resize(block);
    const int fd = fd_of(index);
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

void ReceiveTransfer::fail_file(std::uint32_t index, const std::string& why) {
    {
        std::lock_guard lock(mutex_);
        FileState& f = files_[index];
        if (f.status != FileState::Status::Waiting) return;
        if (f.fd >= 0) ::close(f.fd);
        f.fd = -1;
        f.status = FileState::Status::Failed;
        f.problem = why;
        ++resolved_;
    }
    spdlog::warn("{}: transfer {:016x}: {}: {}", settings_.log_name, id_, path_of(index), why);
    maybe_finish();
}

void ReceiveTransfer::maybe_finish() {
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
    }
    succeeded_ = failed.empty();
    if (!failed.empty()) {
        std::lock_guard lock(mutex_);
        problem_ = std::to_string(failed.size()) + " file(s) failed, " + failed[0]["path"].get<std::string>() + ": " +
                   failed[0]["why"].get<std::string>();
    }
    // Directory modes last: a read-only directory would have refused its files.
    for (const auto& d : manifest_.dirs) {
        const std::string path = prefix_.empty() ? d.path : prefix_ + "/" + d.path;
        ::fchmodat(tree_.parent_fd(path), split_path(path).second.c_str(), d.mode, 0);
    }
    if (succeeded_) journal_->remove();
    const std::string report = json{{"files", done}, {"in_place", skipped}, {"failed", failed},
                                    {"bytes_written", bytes_written_.load()}}.dump();
    spdlog::info("{}: transfer {:016x} done: {} files written, {} already in place, {} failed; {} bytes written",
                 settings_.log_name, id_, done, skipped, failed.size(), bytes_written_.load());
    try {
        std::lock_guard lock(control_send_);
        write_frame(control_fd_, Frame{Kind::Report, id_}, report.data(), report.size());
    } catch (const std::exception& e) {
        spdlog::warn("{}: transfer {:016x}: cannot send the report: {}", settings_.log_name, id_, e.what());
    }
    if (ring_) ring_->abort();
}

std::string ReceiveTransfer::problem() const {
    std::lock_guard lock(mutex_);
    return problem_;
}

void ReceiveTransfer::abort(const std::string& why) {
    std::vector<int> streams;
    {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        finished_ = true;
        streams = streams_;
        problem_ = why;
    }
    spdlog::error("{}: transfer {:016x} stopped: {}; what was written stays for a resumed transfer", settings_.log_name, id_, why);
    try {  // the sender learns why, if it is still there
        std::lock_guard lock(control_send_);
        if (control_fd_ >= 0) write_frame(control_fd_, Frame{Kind::Error, id_}, why.data(), why.size());
    } catch (const std::exception&) {
    }
    if (ring_) ring_->abort();
    for (int fd : streams) ::shutdown(fd, SHUT_RDWR);  // wakes the other streams' readers
}

}  // namespace slabcast::mover
