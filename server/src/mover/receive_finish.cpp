// The end of each file and of the transfer on the receiving side: a whole
// file's checksum (and, with --read-back, its bytes on the storage) checked
// against the sender's, its mode and time set, and the part file renamed into
// place; a failed file named; and once every file is resolved, directory
// modes, the journal removed on success, and the report to the sender.
#include "mover/receive_transfer.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace slabcast::mover {
using nlohmann::json;

// The file is whole: its checksum, made of the checksums of the blocks that
// arrived (each verified against its bytes) and of those journaled by an
// earlier run, must be the sender's, made of the blocks it read. Only then is
// it moved into place. (Finishing: no other thread touches its blocks' state.)
void ReceiveTransfer::finish_file(std::uint32_t index) {
    FileState& f = files_[index];
    const ManifestFile& m = manifest_.files[index];
    std::shared_ptr<PartFile> fd;
    {
        // A block of it still being written (sent again: write_block) may yet
        // change its bytes or fail it, and a stream may be making its part
        // file (part_for_block): only once neither is, it is judged.
        std::unique_lock lock(mutex_);
        written_.wait(lock, [&] { return f.writes == 0 && !f.opening; });
        if (f.status != FileState::Status::Finishing) return;  // failed meanwhile
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
    std::vector<bool>().swap(f.writing);  // (f.writes: a write still under way counts itself down)
    std::vector<std::uint64_t>().swap(f.sums);
    ++resolved_;
}

void ReceiveTransfer::fail_file(std::uint32_t index, const std::string& why) {
    {
        std::lock_guard lock(mutex_);
        if (!fail_locked(files_[index], why)) return;
    }
    file_failed(index, why);
}

bool ReceiveTransfer::fail_locked(FileState& f, const std::string& why) {
    if (f.status != FileState::Status::Waiting && f.status != FileState::Status::Finishing) return false;
    f.problem = why;
    resolve(f, FileState::Status::Failed);
    return true;
}

void ReceiveTransfer::file_failed(std::uint32_t index, const std::string& why) {
    spdlog::warn("{}: transfer {:016x}: {}: {}", settings_.log_name, id_, path_of(index), why);
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

}  // namespace slabcast::mover
