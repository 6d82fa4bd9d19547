// The receiving side of one transfer (`slabcast serve`): the manifest is
// checked and the tree prepared, then back-end threads (one per TCP stream)
// put every block into the ring and a pool of front-end writer threads takes
// them out: verify the block's checksum, write it at its offset, note it in
// the journal, and once a file is whole, check the file's checksum (made of
// its blocks' checksums) against the sender's, optionally read it back too,
// and move it into place under its name.
#pragma once

#include "mover/block_ring.h"
#include "mover/dest_tree.h"
#include "mover/journal.h"
#include "mover/manifest.h"
#include "mover/wire.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace slabcast::mover {

struct ReceiveSettings {
    int writers = 4;
    std::size_t ring_bytes = 256u << 20;
    // Read every finished file back and check each block against its checksum:
    // catches what goes wrong between write() and the storage, at the cost of
    // reading the whole transfer a second time.
    bool read_back = false;
    std::string log_name = "serve";  // how its log lines begin
};

class ReceiveTransfer {
public:
    // `prefix`: the destination inside the tree ("" for its top).
    // `root`: the server's --root, opened afresh for each transfer (its
    // directories may have been removed or replaced since the last one).
    ReceiveTransfer(std::uint64_t id, const std::string& root, std::string prefix, ReceiveSettings settings);
    ~ReceiveTransfer();

    std::uint64_t id() const { return id_; }
    // Stream 0: reads the manifest, prepares the tree, answers with Have, then
    // carries blocks like any stream. Returns when the stream ends.
    void run_first_stream(int fd);
    // Streams 1..n: blocks until Bye or the end of the transfer.
    void run_stream(int fd);
    // Changes the writer pool while the transfer runs.
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
    struct FileState {
        int fd = -1;          // opened at its first block (not all at once: a tree may hold more files than fds)
        bool resume = false;  // its part file holds blocks of an earlier run
        std::uint64_t blocks = 0, blocks_seen = 0;
        std::vector<bool> seen;
        std::vector<std::uint64_t> sums;  // each block's checksum, as verified on arrival (or journaled)
        bool end_seen = false;
        std::uint64_t checksum = 0;
        enum class Status { Waiting, Done, Failed, Skipped } status = Status::Waiting;
        std::string problem;
    };

    void prepare(const std::string& manifest_text, int control_fd);
    void carry_blocks(int fd, bool first);
    void writer_loop(const std::atomic<bool>* quit);
    // `payload_sum`: checksum() of the payload, taken as it arrived.
    void handle(const Frame& f, const std::uint8_t* payload, std::uint64_t payload_sum);
    void block_arrived(std::uint32_t file, std::uint64_t offset, std::uint64_t length);
    int fd_of(std::uint32_t file);
    void finish_file(std::uint32_t file);
    bool read_back_matches(std::uint32_t file);
    void fail_file(std::uint32_t file, const std::string& why);
    void maybe_finish();
    std::string path_of(std::uint32_t file) const;
    std::string part_of(std::uint32_t file) const;

    std::uint64_t id_;
    DestTree tree_;
    std::string prefix_;
    ReceiveSettings settings_;
    Manifest manifest_;
    std::vector<FileState> files_;
    std::unique_ptr<Journal> journal_;
    std::unique_ptr<BlockRing> ring_;
    mutable std::mutex mutex_;  // files_ status, counters, streams_
    std::vector<int> streams_;
    int control_fd_ = -1;
    std::mutex control_send_;
    bool done_seen_ = false;
    std::uint64_t resolved_ = 0;
    std::atomic<bool> finished_{false}, succeeded_{false};
    std::mutex pool_mutex_;
    std::vector<std::thread> writers_;
    std::vector<std::unique_ptr<std::atomic<bool>>> writer_quit_;
    std::atomic<std::uint64_t> bytes_written_{0};
    std::atomic<bool> prepared_{false};
    std::string problem_;  // under mutex_
};

}  // namespace slabcast::mover
