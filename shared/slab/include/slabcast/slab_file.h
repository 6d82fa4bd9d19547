// One slab in shared memory: a file under the shm directory (tmpfs, /dev/shm),
// a 4 KiB header followed by the slab's float32 values, page aligned so a reader
// can hand the mapping straight to VTK. The receiver is the only writer; readers
// map it read-only. Layout is documented in docs/shared-memory.md.
#pragma once

#include "slabcast/mapped_region.h"
#include "slabcast/unique_fd.h"
#include "slabcast/volume.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace slabcast {

constexpr char kSlabMagic[8] = {'S', 'L', 'A', 'B', 'C', 'A', 'S', 'T'};
constexpr std::uint32_t kSlabVersion = 1;
constexpr std::size_t kSlabHeaderBytes = 4096;
constexpr std::uint32_t kValueFloat32 = 1;

// Counters of the step being written and of the last finished one. All live
// fields are lock-free atomics so another process can read them while the
// receiver writes; they are advisory (a reader may see a mix of two updates).
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
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared counters need lock-free atomics");

struct SlabHeader {
    char magic[8];
    std::uint32_t version;
    std::uint32_t header_bytes;   // offset of the values
    std::uint64_t data_bytes;     // bytes of values
    std::int32_t nx, ny, nz;      // whole volume
    std::int32_t slab_index;
    std::int32_t slab_depth;
    std::int32_t z_begin, z_end;  // owned planes [z_begin, z_end)
    std::int32_t stored_z_begin;  // first stored plane (ghosts below z_begin)
    std::uint32_t value_type;     // kValueFloat32
    char field[64];               // field name, NUL terminated
    std::uint8_t reserved[128];
    SlabLive live;
};
static_assert(sizeof(SlabHeader) <= kSlabHeaderBytes);
// The byte offsets are a contract with other readers (docs/shared-memory.md, the
// Python test tools): pin them.
static_assert(offsetof(SlabHeader, data_bytes) == 16 && offsetof(SlabHeader, nx) == 24 &&
              offsetof(SlabHeader, stored_z_begin) == 52 && offsetof(SlabHeader, field) == 60 &&
              offsetof(SlabHeader, live) == 256);
static_assert(offsetof(SlabLive, step) == 16 && offsetof(SlabLive, last_step_loss_ppm) == 56 &&
              offsetof(SlabLive, packets) == 64 && offsetof(SlabLive, heartbeat_ns) == 104 &&
              offsetof(SlabLive, foreign) == 112);

// A mapped slab file. Move-only; unmaps and closes on destruction.
//
// A reader's shape (dims, geometry, depth, field, value count) is the one its
// header had when it was validated, kept here: the header in the mapping is
// another process's memory and may change afterwards, so nothing that sizes,
// indexes or offsets anything is read from it again. The file stays open so
// that a reader can ask, with read_header() and still_whole(), without touching
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
    static SlabMapping create(const std::string& path, const Dims& dims, int slab_depth,
                              const SlabGeometry& geometry, const std::string& field);
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
    const float* values() const { return reinterpret_cast<const float*>(region_.base() + kSlabHeaderBytes); }
    float* values_rw() { return reinterpret_cast<float*>(region_.base() + kSlabHeaderBytes); }
    std::size_t value_count() const { return static_cast<std::size_t>(data_bytes_ / sizeof(float)); }
    std::uint64_t data_bytes() const { return data_bytes_; }
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
    bool still_whole() const;

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
};

// Everything a slab header must satisfy for a file of `file_bytes`, checked
// with overflow-safe arithmetic: sizes within kMaxAxis, the slab's planes
// exactly those its index and depth give, the values within the file. "" when
// sound, else the problem.
std::string slab_header_problem(const SlabHeader& h, std::uint64_t file_bytes);

// True when `path` is already a slab of exactly this shape, the one
// SlabMapping::create re-attaches to (with its pages) instead of replacing.
bool slab_file_matches(const std::string& path, const Dims& dims, int slab_depth, const SlabGeometry& geometry,
                       const std::string& field);

// "NAME.slab<k>": the file name of a slab, in the descriptor's directory.
std::string slab_file_name(const std::string& name, int slab_index);
std::string slab_file_path(const std::string& shm_dir, const std::string& name, int slab_index);

}  // namespace slabcast
