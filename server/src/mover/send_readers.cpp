// The front end of the sending side: a pool of reader threads (resized while
// the transfer runs) takes the files in pieces (a whole small file, or a run
// of blocks of a large one), reads each block into a ring slot behind its
// tagged header (file, offset, checksum; a block of zeros goes as a Zeros
// frame, without its bytes), and hands full slots to the stream threads. The
// last piece of a file sends its FileEnd. Balman et al., 2012, section 5.3:
// the front end fills memory blocks, tagged with their content, for the back
// end to send; disk and network parallelism set apart.
#include "mover/send_transfer.h"

#include "mover/wire.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace slabcast::mover {

namespace {

bool all_zero(const std::uint8_t* p, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        if (w) return false;
    }
    for (; i < n; ++i)
        if (p[i]) return false;
    return true;
}

// Writes a frame's header in place (its payload, if any, is already there).
void put_header(std::uint8_t* at, const Frame& f) { encode_header(f, at); }

}  // namespace

int SendTransfer::readers() const {
    std::lock_guard lock(pools_mutex_);
    return static_cast<int>(readers_.threads.size());
}

void SendTransfer::set_readers(int n) {
    std::lock_guard lock(pools_mutex_);
    if (!ring_) return;
    while (static_cast<int>(readers_.threads.size()) < n && !reading_done_) {
        readers_.quit.push_back(std::make_unique<std::atomic<bool>>(false));
        ++readers_running_;
        readers_.threads.emplace_back(&SendTransfer::reader_loop, this, readers_.quit.back().get());
    }
    while (static_cast<int>(readers_.threads.size()) > n && (n == 0 || readers_.threads.size() > 1)) {
        *readers_.quit.back() = true;
        readers_.threads.back().join();
        readers_.threads.pop_back();
        readers_.quit.pop_back();
    }
}

std::uint8_t* SendTransfer::reserve(Slot*& slot, std::size_t payload, bool aligned, std::size_t referenced) {
    const std::size_t need = kHeaderBytes + payload;
    // A slot carries about its capacity on the wire, referenced payloads included.
    if (slot && (slot->used + slot->referenced + need + referenced > slot->capacity ||
                 (aligned && slot->used > slot->begin))) {
        ring_->put_full(slot);
        slot = nullptr;
    }
    if (!slot) {
        for (;;) {
            const auto r = ring_->take_free(slot, 200);
            if (r == BlockRing::Take::Got) break;
            if (r == BlockRing::Take::Closed) return nullptr;
        }
        slot->begin = slot->used = aligned ? 4096 - kHeaderBytes : 0;
    }
    std::uint8_t* at = slot->data + slot->used;
    slot->used += need;
    return at;
}

void SendTransfer::plan_pieces() {
    reading_ = std::make_unique<FileReading[]>(manifest_.files.size());
    for (std::uint32_t i = 0; i < manifest_.files.size(); ++i) {  // all of them: the answer is not in yet
        const std::uint64_t blocks = blocks_of(manifest_.files[i].size, manifest_.block);
        ++files_to_send_;
        bytes_to_send_ += manifest_.files[i].size;  // all of it is read (the blocks it has too, for the checksum)
        reading_[i].sums.assign(blocks, 0);
        std::uint32_t pieces = 0;
        for (std::uint64_t b = 0; b < blocks || (b == 0 && pieces == 0); b += kPieceBlocks, ++pieces)
            pieces_.push_back(Piece{i, b, std::min(blocks, b + kPieceBlocks)});
        reading_[i].pieces_left = pieces;
    }
}

void SendTransfer::reader_loop(const std::atomic<bool>* quit) {
    Slot* slot = nullptr;
    try {
        while (!*quit) {
            const std::size_t i = next_piece_++;
            if (i >= pieces_.size()) break;
            read_piece(pieces_[i], slot, quit);
        }
    } catch (const std::exception& e) {
        fail(e.what());
    }
    if (slot) {
        if (slot->used > slot->begin) ring_->put_full(slot);
        else ring_->put_free(slot);
    }
    // The last reader out, with every piece taken, ends the stream of blocks.
    if (--readers_running_ == 0 && next_piece_ >= pieces_.size()) {
        reading_done_ = true;
        ring_->close_full();
    }
}

// The first failure of a file is sent (once, whichever piece meets it); its
// other pieces are skipped, and no FileEnd follows.
void SendTransfer::file_failed(std::uint32_t index, const std::string& why, Slot*& slot) {
    if (!reading_[index].failed.exchange(true)) {
        spdlog::warn("move: {}: {}", manifest_.files[index].source, why);
        ++progress_.files_failed;
        if (std::uint8_t* at = reserve(slot, why.size(), false)) {
            std::memcpy(at + kHeaderBytes, why.data(), why.size());
            put_header(at, Frame{Kind::FileFailed, id_, index, static_cast<std::uint32_t>(why.size())});
        }
    }
    piece_done(index, slot);
}

void SendTransfer::piece_done(std::uint32_t index, Slot*& slot) {
    FileReading& r = reading_[index];
    if (--r.pieces_left != 0 || r.failed) return;
    std::uint8_t* at = reserve(slot, 0, false);
    if (!at) return;
    put_header(at, Frame{Kind::FileEnd, id_, index, 0, 0, file_checksum(r.sums.data(), r.sums.size()),
                         manifest_.files[index].size});
    ++progress_.files_read;
}

// Reads [off, off + len) of `fd` into `data` a cache piece at a time (into
// the same kCachePiece bytes again and again when `reuse`), hashing each piece
// and looking for zeros while it is in cache. false if the file ended first.
bool SendTransfer::read_block(int fd, std::uint64_t off, std::size_t len, std::uint8_t* data, bool reuse,
                              std::uint64_t& sum, bool& zeros) {
    RunningChecksum running;
    zeros = true;
    for (std::size_t got = 0; got < len;) {
        const std::size_t want = std::min(kCachePiece, len - got);
        std::uint8_t* to = reuse ? data : data + got;
        std::size_t piece = 0;
        while (piece < want) {
            const ssize_t n = ::pread(fd, to + piece, want - piece, static_cast<off_t>(off + got + piece));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            piece += static_cast<std::size_t>(n);
        }
        running.add(to, piece);
        zeros = zeros && all_zero(to, piece);
        got += piece;
    }
    sum = running.value();
    return true;
}

void SendTransfer::read_piece(const Piece& piece, Slot*& slot, const std::atomic<bool>* quit) {
    const std::uint32_t index = piece.file;
    const ManifestFile& m = manifest_.files[index];
    FileReading& r = reading_[index];
    if (r.failed) return piece_done(index, slot);
    if (answer_in_ && in_place_.count(index)) return;  // in place: nothing of it is sent, not even its end
    std::shared_ptr<UniqueFd> closer;
    try {
        closer = std::make_shared<UniqueFd>(manifest_.open_source(m));  // a pull's: beneath the served tree, no link on the way
    } catch (const std::runtime_error& e) {
        return file_failed(index, e.what(), slot);
    }
    const int fd = closer->get();
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != m.size)
        return file_failed(index, "changed since it was listed (size " + std::to_string(st.st_size) + ", was " +
                                      std::to_string(m.size) + ")", slot);
    bool answered = false;  // in_place_ and have_ are read once the answer is in, never before
    auto have = have_.end();
    const std::uint64_t block = manifest_.block;
    for (std::uint64_t b = piece.first_block; b < piece.end_block; ++b) {
        if (!answered) {  // blocks are read ahead of the answer up to a budget (begin)
            if (progress_.bytes_read >= kAheadOfAnswer && !wait_for(answer_in_, quit)) return;
            answered = answer_in_;
            if (answered && in_place_.count(index)) return;  // (the answer came while the file was opened)
            if (answered) have = have_.find(index);
        }
        const std::uint64_t off = b * block;
        const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(block, m.size - off));
        std::uint64_t sum = 0;
        bool zeros = true;
        if (zero_copy_ && len >= kRefMinBytes && refs_alive_ < kMaxRefs) {
            // Plaintext: read to hash it (into one reused, cached buffer), and
            // let the stream send it from the page cache. A file that changes
            // before it is sent fails its block's check at the receiving end.
            thread_local const PieceBuffer buffer = piece_buffer();
            if (!read_block(fd, off, len, buffer.get(), true, sum, zeros))
                return file_failed(index, "shrank or could not be read while it was sent", slot);
            r.sums[b] = sum;
            progress_.bytes_read += len;
            if (have != have_.end() && have->second.count(off)) continue;  // the destination has it
            const bool by_ref = !zeros;
            std::uint8_t* at = reserve(slot, 0, false, by_ref ? len : 0);
            if (!at) return;  // the ring was aborted: the transfer is over
            if (!by_ref) {
                put_header(at, Frame{Kind::Zeros, id_, index, 0, off, sum, len});
                continue;
            }
            put_header(at, Frame{Kind::Data, id_, index, static_cast<std::uint32_t>(len), off, sum});
            slot->refs.push_back(PayloadRef{slot->used, closer, off, len});
            slot->referenced += len;
            ++refs_alive_;
            continue;
        }
        std::uint8_t* at = reserve(slot, len, len == block);
        if (!at) return;  // the ring was aborted: the transfer is over
        std::uint8_t* data = at + kHeaderBytes;
        if (!read_block(fd, off, len, data, false, sum, zeros)) {
            slot->used -= kHeaderBytes + len;
            return file_failed(index, "shrank or could not be read while it was sent", slot);
        }
        r.sums[b] = sum;
        progress_.bytes_read += len;
        if (have != have_.end() && have->second.count(off)) {
            slot->used -= kHeaderBytes + len;  // the destination has it: read for the checksum only
        } else if (zeros) {
            slot->used -= len;  // a hole, or zeros: no bytes on the wire
            put_header(at, Frame{Kind::Zeros, id_, index, 0, off, sum, len});
        } else {
            put_header(at, Frame{Kind::Data, id_, index, static_cast<std::uint32_t>(len), off, sum});
        }
    }
    piece_done(index, slot);
}

}  // namespace slabcast::mover
