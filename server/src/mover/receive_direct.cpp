// A block's payload from the socket straight into its part file: read a
// piece at a time (kCachePiece) into one buffer the stream reuses, hashed and
// written at its offset while the piece is still in the CPU's cache. The
// block counts (journal line, the file's progress) only once the checksum of
// what arrived is the sender's; until then its bytes sit in the hidden part
// file, which nothing trusts. Going through the ring instead (socket -> ring
// slot -> writer thread -> file) would cost a 4 MiB slot per block, cold by
// the time a writer copied it out, and a hand-over between threads for every
// block (docs/performance.md, "Mover"). Zero blocks, file ends and failures
// do go through the ring.
//
// What a hostile sender could do with bytes that land before they are checked:
//   - a damaged block over a block the journal vouches for (sent twice): the
//     part file goes with the file's failure, so no resume trusts it;
//   - the same block on two streams at once: the second is read and dropped;
//   - a block of a file that is whole meanwhile: finish_file waits for every
//     write of the file to end, and a block sent again with other contents
//     than the one counted fails the file before it is moved into place;
//   - a block the journal vouches for sent again (a resume sends blocks
//     before it has the answer that lists them): the same bytes, not counted twice.
#include "mover/receive_records.h"
#include "mover/receive_transfer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast::mover {

void ReceiveTransfer::block_state(FileState& f) const {
    if (f.sums.empty()) {  // a resumed file has these from the journal already (prepare)
        f.seen.assign(f.blocks, false);
        f.sums.assign(f.blocks, 0);
    }
    if (f.writing.empty()) f.writing.assign(f.blocks, false);
}

void ReceiveTransfer::write_at(PartFile& part, const std::uint8_t* data, std::size_t n, std::uint64_t offset,
                               std::uint32_t file) {
    std::lock_guard lock(part.writing);
    const int fd = part.get();
    for (std::size_t done = 0; done < n;) {
        const ssize_t w = ::pwrite(fd, data + done, n - done, static_cast<off_t>(offset + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            throw std::runtime_error(tree_.root() + "/" + path_of(file) + ": cannot write: " +
                                     std::strerror(w < 0 ? errno : ENOSPC));
        done += static_cast<std::size_t>(w);
    }
}

void ReceiveTransfer::drop_part(std::uint32_t file) {
    ::unlinkat(tree_.parent(path_of(file))->get(), split_path(part_of(file)).second.c_str(), 0);
}

// Every field of `f` was checked against the manifest (frame_problem).
void ReceiveTransfer::write_block(Channel& c, const Frame& f, std::uint8_t* buf) {
    FileState& file = files_[f.file];
    const std::uint64_t b = f.offset / manifest_.block;
    std::shared_ptr<PartFile> fd;  // none: the payload is read and dropped
    {
        std::unique_lock lock(mutex_);
        if (file.status == FileState::Status::Waiting) {
            block_state(file);
            if (!file.writing[b]) fd = part_for_block(lock, f.file);  // may throw: nothing is marked yet
            // Looked at again: the lock was let go while the part file was made.
            if (fd && file.status == FileState::Status::Waiting && !file.writing[b]) {
                file.writing[b] = true;
                ++file.writes;
            } else {
                fd.reset();
            }
        }
    }
    // However the write ends (a throw included), the block is no longer being
    // written: finish_file may be waiting for it.
    auto done_writing = [&] {
        if (!fd) return;
        if (!file.writing.empty()) file.writing[b] = false;  // empty: resolved (failed) meanwhile
        --file.writes;
        written_.notify_all();
    };
    RunningChecksum sum;
    try {
        for (std::size_t at = 0; at < f.length;) {
            const std::size_t n = std::min<std::size_t>(kCachePiece, f.length - at);
            if (!c.read_full(buf, n)) throw std::runtime_error("the peer closed the connection in the middle of a frame");
            sum.add(buf, n);  // while the piece is still in cache
            if (fd) write_at(*fd, buf, n, f.offset + at, f.file);
            at += n;
        }
    } catch (...) {
        std::lock_guard lock(mutex_);
        done_writing();
        throw;
    }
    if (!fd) return;
    const std::uint64_t value = sum.value();
    std::string why;
    bool drop = false, whole = false;
    {
        // Checked and counted at once: no other write of this block can come
        // between (it waits for writing[b], and is judged against what counted).
        std::lock_guard lock(mutex_);
        done_writing();
        if (file.status != FileState::Status::Waiting && file.status != FileState::Status::Finishing) return;
        const bool counted = file.seen[b];
        if (value != f.checksum) {
            why = fmt::format("block at offset {} damaged in transit", f.offset);
            drop = counted;  // it overwrote bytes the journal vouches for
        } else if (counted && file.sums[b] != value) {
            why = fmt::format("block at offset {} sent twice, with other contents", f.offset);
            drop = true;
        } else if (file.status == FileState::Status::Finishing) {
            return;  // the same block again, of a file whole already: the same bytes
        } else if (counted) {
            return;  // the same block again (a resume's, sent before the answer): counted and journaled already
        }
        if (!why.empty()) {
            fail_locked(file, why);  // at once: finish_file, woken above, must not move it into place
        } else {
            whole = count_block(file, b, value);
        }
    }
    if (!why.empty()) {
        if (drop) drop_part(f.file);
        file_failed(f.file, why);
        return;
    }
    bytes_written_ += f.length;
    journal_block(f.file, f.offset, value);
    if (whole) finish_file(f.file);
}

}  // namespace slabcast::mover
