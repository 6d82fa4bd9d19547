// The receiving side of one transfer (`slabcast serve`, and `stage --from`):
// the manifest is checked against the host's limits and the tree prepared,
// then back-end threads (one per TCP stream) check every frame against the
// manifest as it arrives. A block's payload goes from the socket straight
// into its part file through one cache-sized buffer per stream, hashed on
// the way, and counts (journal, the file's progress) only once its checksum
// matches; the other frames (file ends, zero blocks, failures) are acted on
// by the stream too (with --read-back, through the ring by a pool of
// front-end writer threads). Once a file is whole, its checksum (made of its
// blocks' checksums) is checked against the sender's, optionally the file
// read back too, and it is moved into place under its name.
//
// Every number in a frame or the manifest comes from the peer: each is
// checked before it sizes, indexes or offsets anything, and a frame that is
// not legal in the transfer's state (a block before the manifest, a stream
// joining before it was prepared, a second manifest) stops the transfer with
// a message naming the field.
#pragma once

#include "mover/block_ring.h"
#include "mover/byte_budget.h"
#include "mover/channel.h"
#include "mover/dest_tree.h"
#include "mover/journal.h"
#include "mover/manifest.h"
#include "mover/stream_io.h"
#include "mover/wire.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace slabcast::mover {

// What one transfer may ask of the receiving host (docs/mover.md, "Limits";
// serve's flags set them). Free space is checked too: the bytes a transfer
// declares, less what is in place, must fit the destination.
struct ReceiveLimits {
    std::uint64_t manifest_bytes = 64u << 20;  // --max-manifest-mb
    std::uint64_t entries = 1'000'000;         // --max-files: files and directories
    // --max-blocks: blocks declared in all; each costs 8 bytes of bookkeeping
    // once its file's first block arrives (none before).
    std::uint64_t blocks = std::uint64_t{1} << 24;
    // The Have answer, at most (what does not fit is sent again). Not a flag:
    // the client reads no more than kMaxHaveBytes; tests make it small.
    std::uint64_t have_bytes = kMaxHaveBytes;
    // serve: what the manifests still arriving hold, all transfers together
    // (--max-transfers x --max-manifest-mb); none: no bound beyond manifest_bytes.
    std::shared_ptr<ByteBudget> manifests = nullptr;
};

// The hidden name a file named `name` is written under, next to it, until it
// is whole and verified: `.NAME.slabcast-part`, or a fixed-length name made
// with a hash where that would pass 255 bytes. Anything that cleans up after
// a transfer finds its part files with it.
std::string part_file_name(const std::string& name);

struct ReceiveSettings {
    int writers = 4;
    std::size_t ring_bytes = 256u << 20;
    // Read every finished file back and check each block against its checksum:
    // catches what goes wrong between write() and the storage, at the cost of
    // reading the whole transfer a second time.
    bool read_back = false;
    std::string log_name = "serve";  // how its log lines begin
    ReceiveLimits limits;
    // After Done, once every stream seen has ended and every block is
    // written, how long a file still missing waits for a stream not seen yet
    // (one may still be on its way through serve's accept loop) before it fails.
    int late_streams_s = 10;
    // serve: the client's address, named where a transfer's log lines say
    // it stopped ("" for a pull).
    std::string peer = "";
    // How long stream 0 may send nothing before its manifest is whole (serve
    // --peer-timeout; the socket's own timeout applies again after it); 0:
    // the socket's own throughout.
    int manifest_timeout_s = 0;
    // Called once the manifest is whole, before anything is prepared: serve
    // counts the transfer against --max-transfers here, so that a client
    // that says Hello and nothing more holds no slot. What it throws stops
    // the transfer, and the client is told.
    std::function<void()> manifest_taken = nullptr;
};

class ReceiveTransfer {
public:
    // Part files a transfer holds open at most; the others are reopened when
    // their next block comes (blocks of many files may be in flight at once).
    // A small file's end reaches the writers up to 16 records a stream after
    // its data (carry_blocks): at 64, nearly every small file of a tree was
    // closed and opened again to be finished.
    static constexpr std::size_t kOpenPartFiles = 256;
    // What the streams of a transfer read and hold, all together, while it
    // is being prepared (read_ahead): twice what a sender sends ahead of the
    // Have (SendTransfer::kAheadOfAnswer), so an honest one never waits for
    // it, and a hostile one holds no more than this per transfer
    // (--max-transfers bounds the rest).
    static constexpr std::size_t kReadAheadBytes = 16u << 20;

    // `prefix`: the destination inside the tree ("" for its top).
    // `root`: the server's --root, opened afresh for each transfer (its
    // directories may have been removed or replaced since the last one).
    ReceiveTransfer(std::uint64_t id, const std::string& root, std::string prefix, ReceiveSettings settings);
    ~ReceiveTransfer();

    std::uint64_t id() const { return id_; }
    // Stream 0: reads the manifest, prepares the tree, answers with Have, then
    // carries blocks like any stream until Done, and returns when the
    // transfer has ended.
    void run_first_stream(Channel& c);
    void run_first_stream(int fd) {  // a plaintext socket
        Channel plain(fd);
        run_first_stream(plain);
    }
    // Streams 1..n: blocks until Bye or the end of the transfer. Throws
    // std::runtime_error (the stream is refused) when the transfer is not
    // prepared yet: a stream may join only once the manifest is taken.
    void run_stream(Channel& c);
    void run_stream(int fd) {
        Channel plain(fd);
        run_stream(plain);
    }
    // Changes the writer pool (before the transfer is prepared: its size when it is).
    void set_writers(int n);
    bool finished() const { return finished_; }
    // The manifest is in and the destination prepared: more streams may join.
    bool prepared() const { return prepared_; }
    std::uint64_t bytes_written() const { return bytes_written_; }
    // Why it did not succeed: what stopped it, or the files that failed.
    std::string problem() const;
    bool succeeded() const { return succeeded_; }
    // Ends the transfer: an error, a stop request or a lost peer.
    void abort(const std::string& why);

private:
    // A part file while open, and the lock each write into it takes: streams
    // writing blocks of one file at once wait on it asleep, where the kernel's
    // inode lock would have them spin (15% of the receiving end's CPU on a
    // 1 GiB file; CHANGELOG.md, issue 22).
    struct PartFile {
        explicit PartFile(UniqueFd f) : fd(std::move(f)) {}
        int get() const { return fd.get(); }
        UniqueFd fd;
        std::mutex writing;
    };
    struct FileState {
        std::shared_ptr<PartFile> fd;  // its part file while open (kOpenPartFiles at most per transfer)
        bool part_ready = false;  // created and sized, or left by an earlier run: reopened as it is
        bool opening = false;  // a stream makes its part file now, without mutex_ (part_for_block)
        std::uint64_t blocks = 0, blocks_seen = 0;
        // Per block, allocated at the file's first block (not for every declared
        // block up front), freed once the file is resolved.
        std::vector<bool> seen;
        std::vector<bool> writing;  // its payload being written by a stream now (write_block)
        std::uint32_t writes = 0;   // blocks being written now: finish_file waits for none
        std::vector<std::uint64_t> sums;  // each block's checksum, as verified on arrival (or journaled)
        bool end_seen = false;
        std::uint64_t checksum = 0;
        // Finishing: whole, its checksum being checked; later frames for it are ignored.
        enum class Status { Waiting, Finishing, Done, Failed, Skipped } status = Status::Waiting;
        std::string problem;
    };

    std::string take_manifest(Channel& c);
    std::string take_manifest_in_time(Channel& c);  // within settings_.manifest_timeout_s
    std::string who() const;  // "transfer ID" and where from, for log lines
    void check_limits() const;
    void prepare(const std::string& manifest_text, Channel& control);
    void carry_blocks(Channel& c, bool first);
    // What makes a frame illegal while blocks arrive ("" when it is legal), naming the field.
    std::string frame_problem(const Frame& f) const;
    void writer_loop(const std::atomic<bool>* quit);
    // A Data frame's payload off the stream into its part file (receive_direct.cpp);
    // `buf`: the stream's kCachePiece bytes.
    void write_block(Channel& c, const Frame& f, std::uint8_t* buf);
    void block_state(FileState& f) const;  // under mutex_: its per-block state, made at its first block
    void write_at(PartFile& part, const std::uint8_t* data, std::size_t n, std::uint64_t offset, std::uint32_t file);
    void drop_part(std::uint32_t file);  // its part file goes: bytes the journal vouches for were overwritten
    void handle(const Frame& f, const std::uint8_t* payload);  // a file end, zero block or failure
    void block_arrived(std::uint32_t file, std::uint64_t offset, std::uint64_t sum);
    // A counted block into the journal, for a resume: a file of one block
    // has none (it is whole with its end, and resent whole if it is not).
    void journal_block(std::uint32_t file, std::uint64_t offset, std::uint64_t sum);
    // Under mutex_: block `b` of a waiting file counts with its checksum; true when the file is now whole.
    bool count_block(FileState& f, std::uint64_t b, std::uint64_t sum);
    std::shared_ptr<PartFile> open_part(std::uint32_t file);  // under mutex_
    // Under `lock` (mutex_), which it lets go while it makes the part file;
    // nullptr when the file was resolved meanwhile.
    std::shared_ptr<PartFile> part_for_block(std::unique_lock<std::mutex>& lock, std::uint32_t file);
    UniqueFd make_part(std::uint32_t file, bool ready);  // created and sized unless `ready`; no state touched
    std::shared_ptr<PartFile> keep_open(std::uint32_t file, UniqueFd fd);  // under mutex_
    void finish_file(std::uint32_t file);
    bool read_back_matches(std::uint32_t file, int fd);
    void fail_file(std::uint32_t file, const std::string& why);
    bool fail_locked(FileState& f, const std::string& why);  // under mutex_: false if resolved already
    void file_failed(std::uint32_t file, const std::string& why);  // after fail_locked, without mutex_
    void resolve(FileState& f, FileState::Status status);  // under mutex_
    void forget_stream(int fd);  // under mutex_: before its descriptor is closed
    // Before the transfer is prepared: some of what stream `c` holds, within
    // kReadAheadBytes for them all. False once that is spent or the peer left.
    bool read_ahead(Channel& c);
    void stream_ended();
    void slot_done();
    void check_drained();
    void maybe_finish();
    std::string path_of(std::uint32_t file) const;
    std::string part_of(std::uint32_t file) const;
    Journal::Version version_of(std::uint32_t file) const;

    std::uint64_t id_;
    DestTree tree_;
    std::string prefix_;
    ReceiveSettings settings_;
    Manifest manifest_;
    std::vector<FileState> files_;
    std::unique_ptr<Journal> journal_;
    std::unique_ptr<BlockRing> ring_;
    mutable std::mutex mutex_;  // files_ status and per-block state, counters, streams_, the stages
    std::condition_variable ended_;  // finished_ (or prepared_) became true
    std::condition_variable written_;  // a FileState's writes went down
    std::vector<int> streams_;  // the streams' descriptors while they run (abort() shuts them down)
    std::deque<std::uint32_t> open_order_;  // files whose part file was opened, oldest first
    std::size_t open_parts_ = 0;
    Channel* control_ = nullptr;  // stream 0's, while it runs (under control_send_)
    std::mutex control_send_;
    bool done_seen_ = false;
    // Streams still carrying blocks, and ring slots handed to the writers and
    // not yet written: with Done seen and both at zero, nothing more can come.
    std::atomic<int> carriers_{0};
    std::atomic<std::uint64_t> slots_pending_{0};
    std::uint64_t resolved_ = 0;
    // Under mutex_: Done seen, every stream seen ended, every block written,
    // files still missing; since when (check_drained, run_first_stream).
    bool drained_ = false;
    std::chrono::steady_clock::time_point drained_at_;
    std::atomic<bool> finished_{false}, succeeded_{false};
    std::mutex pool_mutex_;
    bool pool_open_ = false;  // under pool_mutex_: the ring exists, writers may run
    std::vector<std::thread> writers_;
    std::vector<std::unique_ptr<std::atomic<bool>>> writer_quit_;
    std::atomic<std::uint64_t> bytes_written_{0};
    std::atomic<bool> prepared_{false};  // set under mutex_
    std::size_t read_ahead_bytes_ = 0;  // under mutex_: granted to the streams' read_ahead, in all
    int read_ahead_grants_ = 0;  // under mutex_: grants whose recv has not ended yet
    std::string problem_;  // under mutex_
};

}  // namespace slabcast::mover
