// The publication protocol between the one writer of a slab (the receiver, or
// a test writer) and its readers (docs/shared-memory.md, "Buffers and
// publication"). A step is written into a buffer no reader pins and, once
// whole (or given up on), published: from then on that buffer never changes
// until the writer takes it again for a later step, which it does only while
// no reader pins it. A reader pins a publication before it hands its values
// out, so every frame it shows is one real step, never a mix of two. The SC11
// demo listed double buffering as future work (Balman et al., 2012, section 6).
#pragma once

#include "slabcast/slab_file.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace slabcast {

// One buffer's publication as a reader saw it, whole.
struct Publication {
    int buffer = -1;
    std::uint64_t seq = 0;     // the seqlock value it was read under (even, > 0)
    std::int64_t step = -1;
    std::uint64_t number = 0;  // publication number within the slab
    std::uint64_t records = 0;
    std::uint64_t expected = 0;
    std::uint64_t holes = 0;
    std::int64_t published_ns = 0;
    // The step's timeline before publication (BufferTimes): when its sender
    // sent its first packet (the sender's clock) and when the receiver took
    // its first packet; 0 unknown (no stamp came, or an older receiver).
    std::int64_t sent_ns = 0;
    std::int64_t begun_ns = 0;
    std::uint64_t repaired = 0;  // datagrams of it rebuilt from FEC parity (BufferTimes)
    bool complete = false;
    // The receiver's measure of the buffer's owned and ghost planes (known 0:
    // none, the reader measures them itself).
    PartRange owned_range{};
    PartRange ghost_range{};
    double completeness() const {
        return expected ? static_cast<double>(records) / static_cast<double>(expected) : 0.0;
    }
    double hole_fraction() const {
        return expected ? static_cast<double>(holes) / static_cast<double>(expected) : 0.0;
    }
};

// ---- reader side ----------------------------------------------------------

// Buffer b's publication, read with pread (never through the mapping: a file
// cut short under it would fault) under the seqlock: nullopt while the writer
// has the buffer, when it was never published, or when the file no longer
// holds a whole header.
std::optional<Publication> read_publication(const SlabMapping& m, int b);
// Every buffer that holds a published step, newest publication first.
std::vector<Publication> held_publications(const SlabMapping& m);
// The newest publication, if any.
std::optional<Publication> newest_publication(const SlabMapping& m);

// A pinned publication: while it lives the writer leaves its buffer alone.
// Shared by everything that points into the buffer (the reader's current
// frame, the arrays handed to VTK); the pin goes with the last owner.
class PinnedPublication {
public:
    PinnedPublication(std::shared_ptr<const SlabMapping> mapping, const Publication& p)
        : mapping_(std::move(mapping)), publication_(p) {}
    ~PinnedPublication();
    PinnedPublication(const PinnedPublication&) = delete;
    PinnedPublication& operator=(const PinnedPublication&) = delete;

    const SlabMapping& slab() const { return *mapping_; }
    const std::shared_ptr<const SlabMapping>& mapping() const { return mapping_; }
    const Publication& publication() const { return publication_; }
    const float* values() const { return mapping_->values(publication_.buffer); }
    const std::uint8_t* ages() const { return mapping_->ages(publication_.buffer); }

private:
    std::shared_ptr<const SlabMapping> mapping_;
    Publication publication_;
};
using PinnedPublicationPtr = std::shared_ptr<const PinnedPublication>;

// Pins `p` (a publication of `m` read earlier) and confirms it is still the
// one in its buffer; nullptr when the writer took the buffer meanwhile (pin
// first, check after: a writer checks for pins only after it has marked the
// buffer taken, so one of the two always sees the other).
PinnedPublicationPtr pin_publication(const std::shared_ptr<const SlabMapping>& m, const Publication& p);
// The newest publication of `m` whose step is `step`, pinned; nullptr when no
// buffer holds that step any more.
PinnedPublicationPtr pin_step(const std::shared_ptr<const SlabMapping>& m, std::int64_t step);

// The newest step that every slab in `held` (each slab's held publications)
// holds; nullopt when they have none in common.
std::optional<std::int64_t> newest_common_step(const std::vector<std::vector<Publication>>& held);

// ---- writer side ----------------------------------------------------------

// True when some reader pins buffer b of the file open as `fd` (F_OFD_GETLK).
bool buffer_pinned(int fd, int b);

// Takes a buffer for a new step: not pinned, the oldest publication first
// (never-published buffers before all), the newest publication only when
// every other buffer is pinned. Marks it taken (its seq odd) before it looks
// for pins. Returns -1 when every buffer is pinned; `why` then says so.
// `pinned`: how many buffers readers held as it looked (all of them when it
// found none).
int take_buffer(SlabMapping& m, std::string* why = nullptr, int* pinned = nullptr);

// The readers of a slab, for the buffers it needs: live views (the GUI,
// pvbatch, pvpython, a pvserver's rank), views with History N (their N), and
// recorders.
struct ReaderMix {
    int views = 0;
    std::vector<int> histories;
    int recorders = 0;
};
// "view,view,record,history:4": each reader once (1..kMaxBuffers of them).
// Throws std::invalid_argument naming what is wrong.
ReaderMix parse_reader_mix(const std::string& list);
// Buffers a slab needs so that its readers never make the receiver drop a
// step: one to write into, and the most each reader pins at once. A live
// view pins 2 as it moves on: the new step, while the view still holds the
// frame it drew before (ParaView's representation keeps its input until it
// takes the next one). A view with History N pins N + 1 (its N steps and
// that frame), a recorder 1 (the step it copies out). May exceed kMaxBuffers.
int buffers_for_readers(const ReaderMix& readers);

struct PublishInfo {
    std::int64_t step = -1;
    std::uint64_t records = 0;
    std::uint64_t expected = 0;
    std::uint64_t holes = 0;
    bool complete = false;
    PartRange owned_range{};  // known 0: not measured
    PartRange ghost_range{};
    std::int64_t sent_ns = 0;   // the step stamp's time, 0 none
    std::int64_t begun_ns = 0;  // CLOCK_REALTIME of the step's first packet, 0 unknown
    std::uint64_t repaired = 0; // datagrams rebuilt from FEC parity while it was written
};
// Publishes buffer b (taken with take_buffer and written): fills in its
// publication, makes its seq even, and counts it in live.publications.
void publish_buffer(SlabMapping& m, int b, const PublishInfo& info);

}  // namespace slabcast
