// One slab in shared memory: a file under the shm directory (tmpfs, /dev/shm),
// a 4 KiB header followed by the slab's float32 values, page aligned so a reader
// can hand the mapping straight to VTK. The receiver is the only writer; readers
// map it read-only. Layout is documented in docs/shared-memory.md.
#pragma once

#include "slabcast/mapped_region.h"
#include "slabcast/unique_fd.h"
#include "slabcast/volume.h"

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace slabcast {

constexpr char kSlabMagic[8] = {'S', 'L', 'A', 'B', 'C', 'A', 'S', 'T'};
// Version 2: K value buffers and K age buffers per slab, each buffer published
// whole (docs/shared-memory.md). Version 1 had one buffer written in place.
constexpr std::uint32_t kSlabVersion = 2;
constexpr std::size_t kSlabHeaderBytes = 4096;
constexpr std::uint32_t kValueFloat32 = 1;
// Buffers per slab: the one on screen, the one being written, and one spare so
// that a reader still holding the previous frame never stops the receiver.
constexpr int kDefaultBuffers = 3;
constexpr int kMinBuffers = 2;
constexpr int kMaxBuffers = 16;
// The age of a value: 0 it arrived in the step the buffer holds, k it is k
// steps old (filled from an earlier step where this one lost it), saturating
// at kAgeOldest; kAgeCoarse it was filled from a coarser sample of the same
// step (`--fill nearest`, slabcast/progressive_rows.h); kAgeNeverArrived it
// has never arrived at all.
constexpr std::uint8_t kAgeOldest = 253;
constexpr std::uint8_t kAgeCoarse = 254;
constexpr std::uint8_t kAgeNeverArrived = 255;
// A reader pins buffer b with an OFD read lock on byte kPinLockOffset + b of
// the file (the kernel drops it with the process); the receiver does not take
// a pinned buffer for a new step.
constexpr off_t kPinLockOffset = 2048;

// Counters of the step being written and of the last finished one. All live
// fields are lock-free atomics so another process can read them while the
// receiver writes; they are advisory (a reader may see a mix of two updates).
// What a reader shows comes from the buffers' publications below, which are
// read consistently.
struct SlabLive {
    std::atomic<std::uint64_t> generation;     // +1 when a step starts and when it ends
    std::atomic<std::uint64_t> writes;         // +1 per batch of packets stored
    std::atomic<std::int64_t> step;            // step being written, -1 before any
    std::atomic<std::uint64_t> step_records;   // distinct owned values of `step` so far
    std::atomic<std::uint64_t> step_expected;  // owned values of a complete step
    std::atomic<std::int64_t> last_step;       // last finished step, -1 before any
    std::atomic<std::uint64_t> last_step_records;
    std::atomic<std::uint32_t> last_step_loss_ppm;  // loss of last_step, parts per million
    std::atomic<std::uint32_t> last_step_complete;  // 1 if every owned value arrived
    std::atomic<std::uint64_t> packets;        // accepted packets, all steps
    std::atomic<std::uint64_t> rejected;       // malformed or out-of-slab packets
    std::atomic<std::uint64_t> stale;          // packets of an old step
    std::atomic<std::uint64_t> duplicates;     // records already received this step
    std::atomic<std::int64_t> writer_pid;      // receiver process, 0 when none
    std::atomic<std::int64_t> heartbeat_ns;    // CLOCK_REALTIME of the last update
    std::atomic<std::uint64_t> foreign;        // datagrams from senders not on the allowlist
    std::atomic<std::int32_t> writing_buffer;  // buffer `step` is written into, -1 when none
    std::atomic<std::uint32_t> reserved0;
    std::atomic<std::uint64_t> publications;   // +1 per published step
    std::atomic<std::uint64_t> dropped_steps;  // steps not written: every buffer was pinned by readers
    std::atomic<std::uint64_t> dropped_packets;  // packets of those steps
    // The receiver's status, once a second (the same figures as its
    // --stats-json line), for monitors that cannot see its terminal.
    std::atomic<std::uint64_t> bytes;            // datagram bytes received for this slab, all steps
    std::atomic<std::uint64_t> rate_bits_per_s;  // over the last status second
    std::atomic<std::int64_t> rate_ns;           // CLOCK_REALTIME when that rate was measured, 0 never
    // Buffers readers pinned when the receiver began its last step, and the
    // most it has seen pinned so: at buffers - 1 the next reader's pin drops
    // a step (the receiver warns, naming the readers).
    std::atomic<std::uint32_t> pinned;
    std::atomic<std::uint32_t> pinned_peak;
    std::atomic<std::uint64_t> stamps;           // step stamps taken (slabcast/step_stamp.h), all steps
    // Forward error correction (slabcast/fec_receiver.h), all steps: data
    // and parity datagrams taken, data datagrams rebuilt from parity, and
    // those lost beyond repair (a group given up with data missing), and
    // datagrams refused (a header that breaks a rule, a group that disagrees).
    std::atomic<std::uint64_t> fec_data;
    std::atomic<std::uint64_t> fec_parity;
    std::atomic<std::uint64_t> fec_repaired;
    std::atomic<std::uint64_t> fec_unrepaired;
    std::atomic<std::uint64_t> fec_malformed;
};

// Steps a slab's receiver has begun, from SlabLive::generation (which also
// counts each step's end): a stream that merely finished its step has not
// moved on to a new one.
constexpr std::uint64_t steps_begun(std::uint64_t generation) { return (generation + 1) / 2; }
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared counters need lock-free atomics");

// One buffer's publication: the step it holds and how whole it is. A seqlock:
// the receiver makes `seq` odd before it touches the buffer (values, ages or
// these fields) and even again, one higher, when it publishes; a reader that
// reads the same even `seq` before and after the fields saw one publication
// whole. seq 0: never published.
struct BufferPublication {
    std::atomic<std::uint64_t> seq;
    std::atomic<std::int64_t> step;            // -1 none
    std::atomic<std::uint64_t> number;         // publication number of the slab (1, 2, ...)
    std::atomic<std::uint64_t> records;        // owned values that arrived in this step
    std::atomic<std::uint64_t> expected;       // owned values of a whole step
    std::atomic<std::uint64_t> holes;          // owned values filled from an older step (or never arrived)
    std::atomic<std::int64_t> published_ns;    // CLOCK_REALTIME of the publication
    std::atomic<std::uint32_t> complete;       // 1 when every owned value arrived
    std::atomic<std::uint32_t> reserved;
};
static_assert(sizeof(BufferPublication) == 64);

// What the receiver measured of a published buffer as it placed its values:
// the range of its owned planes and of its ghost planes, each with their ages'
// range, so that a reader need not read the step once more for them (ParaView
// asks for every array's range on every new step). Written with the
// publication, under its seqlock, with the publication's `seq`: a record whose
// seq is not the publication's (an older receiver's, which wrote none) is not
// used.
struct PartRange {
    float lo, hi;               // NaN left out; lo > hi: no value but NaN
    std::uint8_t age_lo, age_hi;
    std::uint8_t known;         // 1: measured, and no value is an infinity
    std::uint8_t reserved;
};
struct BufferRanges {
    std::uint64_t seq;
    PartRange owned, ghost;
};
static_assert(sizeof(PartRange) == 12 && sizeof(BufferRanges) == 32);

// When a published buffer's step was sent and begun: the sender's time of its
// first data packet, from the step stamp (slabcast/step_stamp.h; the sender's
// clock, 0 when no stamp came), and the receiver's time of the first packet
// it took of the step (CLOCK_REALTIME). With the publication's published_ns
// they are the step's timeline up to the reader. With them, what forward
// error correction rebuilt of the step. Written with the publication, under
// its seqlock, like BufferRanges.
struct BufferTimes {
    std::uint64_t seq;
    std::int64_t sent_ns;
    std::int64_t begun_ns;
    std::uint64_t repaired;  // datagrams rebuilt from FEC parity while the step was written
};
static_assert(sizeof(BufferTimes) == 32);

struct SlabHeader {
    char magic[8];
    std::uint32_t version;
    std::uint32_t header_bytes;   // offset of the values
    std::uint64_t data_bytes;     // bytes of values in one buffer
    std::int32_t nx, ny, nz;      // whole volume
    std::int32_t slab_index;
    std::int32_t slab_depth;
    std::int32_t z_begin, z_end;  // owned planes [z_begin, z_end)
    std::int32_t stored_z_begin;  // first stored plane (ghosts below z_begin)
    std::uint32_t value_type;     // kValueFloat32
    char field[64];               // field name, NUL terminated
    std::uint32_t buffers;        // K, kMinBuffers..kMaxBuffers
    std::uint64_t buffer_stride;  // bytes from one value buffer to the next (data_bytes to a page)
    std::uint64_t ages_offset;    // file offset of age buffer 0
    std::uint64_t age_stride;     // bytes from one age buffer to the next (values to a page)
    std::uint8_t reserved[104];
    SlabLive live;
    std::uint8_t reserved_live[512 - 256 - sizeof(SlabLive)];
    BufferPublication publication[kMaxBuffers];
    BufferRanges ranges[kMaxBuffers];
    std::uint8_t pin_bytes[64];   // never written: readers lock bytes kPinLockOffset + b
    BufferTimes times[kMaxBuffers];
};
static_assert(sizeof(SlabHeader) <= kSlabHeaderBytes);
// The byte offsets are a contract with other readers (docs/shared-memory.md, the
// Python test tools): pin them.
static_assert(offsetof(SlabHeader, data_bytes) == 16 && offsetof(SlabHeader, nx) == 24 &&
              offsetof(SlabHeader, stored_z_begin) == 52 && offsetof(SlabHeader, field) == 60 &&
              offsetof(SlabHeader, buffers) == 124 && offsetof(SlabHeader, buffer_stride) == 128 &&
              offsetof(SlabHeader, ages_offset) == 136 && offsetof(SlabHeader, age_stride) == 144 &&
              offsetof(SlabHeader, live) == 256 && offsetof(SlabHeader, publication) == 512 &&
              offsetof(SlabHeader, ranges) == 1536 && offsetof(SlabHeader, pin_bytes) == kPinLockOffset &&
              offsetof(SlabHeader, times) == 2112);
static_assert(offsetof(SlabLive, step) == 16 && offsetof(SlabLive, last_step_loss_ppm) == 56 &&
              offsetof(SlabLive, packets) == 64 && offsetof(SlabLive, heartbeat_ns) == 104 &&
              offsetof(SlabLive, foreign) == 112 && offsetof(SlabLive, writing_buffer) == 120 &&
              offsetof(SlabLive, publications) == 128 && offsetof(SlabLive, dropped_packets) == 144 &&
              offsetof(SlabLive, bytes) == 152 && offsetof(SlabLive, rate_bits_per_s) == 160 &&
              offsetof(SlabLive, rate_ns) == 168 && offsetof(SlabLive, pinned) == 176 &&
              offsetof(SlabLive, pinned_peak) == 180 && offsetof(SlabLive, stamps) == 184 &&
              offsetof(SlabLive, fec_data) == 192 && offsetof(SlabLive, fec_unrepaired) == 216 && offsetof(SlabLive, fec_malformed) == 224);

// The file layout of a slab of `values` stored values in `buffers` buffers:
// header, K value buffers, K age buffers, each buffer page aligned. False when
// a size does not fit 64 bits.
struct SlabLayout {
    std::uint64_t data_bytes = 0;     // one buffer's values
    std::uint64_t buffer_stride = 0;
    std::uint64_t ages_offset = 0;
    std::uint64_t age_stride = 0;
    std::uint64_t file_bytes = 0;
};
bool slab_layout(std::uint64_t values, int buffers, SlabLayout& out);

// A mapped slab file. Move-only; unmaps and closes on destruction.
//
// A reader's shape (dims, geometry, depth, field, value count) is the one its
// header had when it was validated, kept here: the header in the mapping is
// another process's memory and may change afterwards, so nothing that sizes,
// indexes or offsets anything is read from it again. The file stays open so
// that a reader can ask, with read_header() and not_truncated(), without touching
// the mapping: a file truncated under a mapping makes a read of the pages past
// its new end a SIGBUS.
class SlabMapping {
public:
    SlabMapping() = default;
    SlabMapping(SlabMapping&& o) noexcept = default;  // leaves `o` empty (not valid())
    SlabMapping& operator=(SlabMapping&& o) noexcept = default;
    SlabMapping(const SlabMapping&) = delete;
    SlabMapping& operator=(const SlabMapping&) = delete;

    // Creates the slab file for writing, or re-attaches to an existing one of
    // exactly this shape (a restarted receiver keeps what it had placed). A
    // file of another shape is never resized in place, which would hand the
    // readers that map it zeros or SIGBUS: a new file is written under a
    // temporary name and renamed over it, and readers keep the old one until
    // they re-open. Throws std::runtime_error naming the path on failure.
    // `buffers` value buffers (and as many age buffers), kMinBuffers..kMaxBuffers.
    static SlabMapping create(const std::string& path, const Dims& dims, int slab_depth,
                              const SlabGeometry& geometry, const std::string& field,
                              int buffers = kDefaultBuffers);
    // Maps the slab `name` (a plain file name) of the directory `dir_fd`
    // read-only, opened without leaving that directory or following a symbolic
    // link (open_beneath), and validates its header against the file size.
    // Throws std::runtime_error naming `path_for_errors` and the problem.
    static SlabMapping open_read_only(int dir_fd, const std::string& name, const std::string& path_for_errors);
    // The same for the file at `path`, in its directory.
    static SlabMapping open_read_only(const std::string& path);

    // The live header, for the writer (and tests): see the class comment.
    const SlabHeader& header() const { return *reinterpret_cast<const SlabHeader*>(region_.base()); }
    SlabHeader& header_rw() { return *reinterpret_cast<SlabHeader*>(region_.base()); }
    // Buffer b's values and ages (b in 0..buffers()-1, from the validated layout).
    const float* values(int b) const { return reinterpret_cast<const float*>(region_.base() + values_offset(b)); }
    float* values_rw(int b) { return reinterpret_cast<float*>(region_.base() + values_offset(b)); }
    const std::uint8_t* ages(int b) const { return region_.base() + ages_offset(b); }
    std::uint8_t* ages_rw(int b) { return region_.base() + ages_offset(b); }
    int buffers() const { return buffers_; }
    // Values stored in one buffer (ghost planes included).
    std::size_t value_count() const { return static_cast<std::size_t>(data_bytes_ / sizeof(float)); }
    // Bytes of values in one buffer.
    std::uint64_t data_bytes() const { return data_bytes_; }
    const SlabLayout& layout() const { return layout_; }
    // File offsets of buffer b's values and ages.
    std::uint64_t values_offset(int b) const { return kSlabHeaderBytes + layout_.buffer_stride * static_cast<std::uint64_t>(b); }
    std::uint64_t ages_offset(int b) const { return layout_.ages_offset + layout_.age_stride * static_cast<std::uint64_t>(b); }

    // Reader side of pinning, counted per buffer within this process: the
    // first pin of a buffer takes the OFD read lock on its byte, the last
    // unpin drops it (one open file description holds one lock per byte, so
    // the kernel cannot count for us). False when the lock could not be taken.
    bool pin(int b) const;
    void unpin(int b) const;
    std::size_t mapped_bytes() const { return region_.length(); }
    const std::uint8_t* base() const { return region_.base(); }
    const std::string& path() const { return path_; }
    bool valid() const { return region_.valid(); }
    int fd() const { return fd_.get(); }
    // The file's identity when it was opened.
    unsigned long long device() const { return device_; }
    unsigned long long inode() const { return inode_; }

    // The shape validated when the slab was opened or created.
    const Dims& dims() const { return dims_; }
    const SlabGeometry& geometry() const { return geometry_; }
    int slab_depth() const { return slab_depth_; }
    const std::string& field() const { return field_; }

    // The header as the file holds it now, read with pread: false when the file
    // no longer holds a whole header. Never touches the mapping.
    bool read_header(SlabHeader& out) const;
    // True while the file still covers every mapped byte (fstat).
    bool not_truncated() const;
    // "" while the header the file holds now (pread) is sound and describes
    // this mapping's shape; else the problem: a file rewritten in place under
    // the mapping (cut to nothing and grown back keeps its inode and size,
    // and its header is gone).
    std::string header_problem() const;

private:
    UniqueFd fd_;           // declared first: the mapping goes before the file closes
    MappedRegion region_;
    unsigned long long device_ = 0, inode_ = 0;
    std::string path_;
    Dims dims_;
    SlabGeometry geometry_;
    int slab_depth_ = 0;
    std::string field_;
    std::uint64_t data_bytes_ = 0;
    int buffers_ = 0;
    SlabLayout layout_;
    struct PinCounts {
        std::mutex mutex;
        std::array<int, kMaxBuffers> count{};
    };
    std::unique_ptr<PinCounts> pins_ = std::make_unique<PinCounts>();
};

// Everything a slab header must satisfy for a file of `file_bytes`, checked
// with overflow-safe arithmetic: sizes within kMaxAxis, the slab's planes
// exactly those its index and depth give, the values within the file. "" when
// sound, else the problem.
std::string slab_header_problem(const SlabHeader& h, std::uint64_t file_bytes);

// True when `path` is already a slab of exactly this shape, the one
// SlabMapping::create re-attaches to (with its pages) instead of replacing.
bool slab_file_matches(const std::string& path, const Dims& dims, int slab_depth, const SlabGeometry& geometry,
                       const std::string& field, int buffers = kDefaultBuffers);

// "NAME.slab<k>": the file name of a slab, in the descriptor's directory.
std::string slab_file_name(const std::string& name, int slab_index);
std::string slab_file_path(const std::string& shm_dir, const std::string& name, int slab_index);

}  // namespace slabcast
