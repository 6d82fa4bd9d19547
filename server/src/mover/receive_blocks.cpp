// What the receiving side does with a block's record (handle): a zero block
// checked, journaled and counted toward its file, a file's end (which may
// make it whole: receive_finish.cpp), a file the sender could not read. Each
// stream acts on its records as they come (receive_frames.cpp); with
// --read-back a pool of writer threads (resized while the transfer runs)
// takes them from the ring instead, as finishing a file then reads it all
// again (Balman et al., 2012, section 5.3: the client's front end takes
// blocks out of the shared memory blocks; blocks may arrive in any order).
// Data payloads never pass through here: each stream writes them into their
// part files as they arrive (receive_direct.cpp).
#include "mover/receive_records.h"
#include "mover/receive_transfer.h"

#include "mover/peer_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace slabcast::mover {

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
            try {
                handle(*f, record + kRecordHead);
            } catch (const std::exception& e) {
                abort(e.what());
            }
            at += record_bytes(f->length);
        }
        ring_->put_free(slot);
        slot_done();
    }
}

void ReceiveTransfer::handle(const Frame& f, const std::uint8_t* payload) {
    FileState& file = files_[f.file];  // every field was checked as the frame arrived (frame_problem)
    const ManifestFile& m = manifest_.files[f.file];
    switch (f.kind) {
    case Kind::Zeros: {  // Data frames are written by their streams (write_block), never through the ring
        const std::uint64_t sum = zeros_checksum(f.extra);
        if (sum != f.checksum) {
            fail_file(f.file, "block at offset " + std::to_string(f.offset) + " damaged in transit");
            return;
        }
        // The part file is sized with ftruncate: the hole reads as zeros already.
        journal_block(f.file, f.offset, sum);
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

void ReceiveTransfer::journal_block(std::uint32_t file, std::uint64_t offset, std::uint64_t sum) {
    // Ten thousand small files were ten thousand appends, each line of no
    // use once its file's end came a moment later.
    if (files_[file].blocks > 1) journal_->block_written(path_of(file), version_of(file), offset, sum);
}

void ReceiveTransfer::block_arrived(std::uint32_t index, std::uint64_t offset, std::uint64_t sum) {
    bool whole = false;
    {
        std::lock_guard lock(mutex_);
        FileState& f = files_[index];
        if (f.status != FileState::Status::Waiting) return;
        block_state(f);
        whole = count_block(f, offset / manifest_.block, sum);  // < f.blocks: frame_problem checked the offset
    }
    if (whole) finish_file(index);
}

bool ReceiveTransfer::count_block(FileState& f, std::uint64_t b, std::uint64_t sum) {
    f.sums[b] = sum;
    if (!f.seen[b]) {  // not a resent block
        f.seen[b] = true;
        ++f.blocks_seen;
    }
    const bool whole = f.end_seen && f.blocks_seen == f.blocks;
    if (whole) f.status = FileState::Status::Finishing;
    return whole;
}

// Opens the file's part file (creating and sizing it the first time), and
// closes the oldest open one beyond kOpenPartFiles: a transfer with blocks
// of a million files in flight must not hold a million descriptors.
std::shared_ptr<ReceiveTransfer::PartFile> ReceiveTransfer::open_part(std::uint32_t index) {
    FileState& f = files_[index];
    if (f.fd) return f.fd;
    UniqueFd fd = make_part(index, f.part_ready);
    f.part_ready = true;
    return keep_open(index, std::move(fd));
}

// A small file's part file is made as its only block arrives: with mutex_
// held through it, every other stream waited on the creation of each file
// (two thirds of the receiving end's lock waits for a tree of 10,000 files).
std::shared_ptr<ReceiveTransfer::PartFile> ReceiveTransfer::part_for_block(std::unique_lock<std::mutex>& lock,
                                                                           std::uint32_t index) {
    FileState& f = files_[index];
    written_.wait(lock, [&] { return !f.opening; });  // another stream makes it: its fd, in a moment
    if (f.fd || f.status != FileState::Status::Waiting) return f.fd;
    f.opening = true;
    const bool ready = f.part_ready;
    lock.unlock();
    UniqueFd made;
    std::exception_ptr failed;
    try {
        made = make_part(index, ready);
    } catch (...) {
        failed = std::current_exception();
    }
    lock.lock();
    f.opening = false;
    written_.notify_all();
    if (failed) std::rethrow_exception(failed);
    f.part_ready = true;
    if (f.status != FileState::Status::Waiting) return nullptr;  // resolved meanwhile
    return keep_open(index, std::move(made));
}

UniqueFd ReceiveTransfer::make_part(std::uint32_t index, bool ready) {
    const std::string part = part_of(index);
    UniqueFd fd = ready ? tree_.open_file(part, O_RDWR) : tree_.open_file(part, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (!ready && ::ftruncate(fd.get(), static_cast<off_t>(manifest_.files[index].size)) != 0)
        throw std::runtime_error(tree_.root() + "/" + part + ": cannot size it: " + std::strerror(errno));
    return fd;
}

std::shared_ptr<ReceiveTransfer::PartFile> ReceiveTransfer::keep_open(std::uint32_t index, UniqueFd fd) {
    FileState& f = files_[index];
    f.fd = std::make_shared<PartFile>(std::move(fd));
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

}  // namespace slabcast::mover
