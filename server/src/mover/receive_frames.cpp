// The back end of each receiving stream: frames read off the socket, every
// field checked against the manifest before anything of the frame is kept
// (frame_problem), then written into their files and acted on; with
// --read-back file ends are laid into ring slots as records
// (receive_records.h) for the front-end writers, which read each file back
// (Balman et al., 2012, section 5.3: network and disk I/O decoupled through a
// set of shared memory blocks).
#include "mover/receive_records.h"
#include "mover/receive_transfer.h"

#include "mover/peer_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace slabcast::mover {

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

// The back end of one stream. A Data frame's payload goes straight into its
// part file (write_block); the other frames (file ends, zero blocks,
// failures: a few dozen bytes each) are acted on here too, while the file's
// part file is open. With --read-back, finishing a file reads it all again:
// those frames then share a ring slot for the writers for as long as more
// frames are already waiting on the socket (ten thousand small files cost a
// few hundred hand-overs, not ten thousand); a slot is handed over once
// nothing more is waiting, or it holds kSlotRecords, so that no frame sits in
// it for want of the next.
void ReceiveTransfer::carry_blocks(Channel& c, bool first) {
    constexpr std::size_t kSlotRecords = 16;
    Slot* slot = nullptr;  // being filled
    std::size_t records = 0;  // in it
    auto hand_over = [&] {
        if (!slot) return;
        ++slots_pending_;
        ring_->put_full(slot);
        slot = nullptr;
    };
    const PieceBuffer buf = piece_buffer();  // the stream's payloads pass through it
    std::string record_payload;  // a FileFailed frame's reason (frame_problem bounds it by the block)
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
                {
                    std::lock_guard lock(mutex_);
                    done_seen_ = true;
                }
                maybe_finish();  // every file resolved already: file ends are acted on as they come
                break;  // nothing more comes on the first stream; the rest may still be on the others
            }
            if (const std::string why = frame_problem(*f); !why.empty()) throw std::runtime_error(why);
            if (f->kind == Kind::Data) {
                write_block(c, *f, buf.get());
            } else if (!settings_.read_back) {
                // Acted on here, its part file still open: through the ring,
                // a small file's end reached a writer up to a second after its
                // data on a loaded host, by then closed and opened again, and
                // the transfer's end waited for the writers to catch up.
                read_payload(c, *f, record_payload);
                handle(*f, reinterpret_cast<const std::uint8_t*>(record_payload.data()));
            } else {  // finishing reads the whole file back: the writers do it, off the stream
                const std::size_t need = record_bytes(f->length);
                if (slot && slot->used + need > slot->capacity) hand_over();
                if (!slot) {
                    for (;;) {
                        const auto r = ring_->take_free(slot, 200);
                        if (r == BlockRing::Take::Got) break;
                        if (r == BlockRing::Take::Closed || finished_) return;
                    }
                    slot->begin = slot->used = 0;
                    records = 0;
                }
                std::uint8_t* record = slot->data + slot->used;
                std::memcpy(record, header, kHeaderBytes);
                if (f->length && !c.read_full(record + kRecordHead, f->length))
                    throw std::runtime_error("the peer closed the connection in the middle of a frame");
                slot->used += need;
                ++records;
            }
            if (slot && (records >= kSlotRecords || c.waiting() < kHeaderBytes)) hand_over();
        }
        hand_over();  // what came before a goodbye is good
    } catch (const std::exception& e) {
        if (slot) ring_->put_free(slot);  // the transfer stops: its frames are not written
        if (!finished_) abort(std::string("stream: ") + e.what());
    }
}

}  // namespace slabcast::mover
