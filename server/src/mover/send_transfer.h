// The sending side of one transfer (`slabcast move`): a pool of reader
// threads (front end) cuts the files into tagged blocks in ring slots, small
// files packed together and large ones split among the readers, and a pool of
// stream threads (back end), one per TCP connection, sends whole slots. Both
// pools can be resized while it runs.
#pragma once

#include "mover/auth.h"
#include "mover/block_ring.h"
#include "mover/channel.h"
#include "mover/early_streams.h"
#include "mover/manifest.h"
#include "mover/stream_io.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace slabcast::mover {

struct SendSettings {
    std::string host;
    int port = 7100;
    std::string dest;
    int streams = 4;
    int readers = 4;
    std::size_t ring_bytes = 256u << 20;
    int peer_timeout_s = 60;
    std::uint64_t transfer_id = 0;  // 0: a new random one; a pull uses the id its receiving end chose
    std::shared_ptr<EarlyStreams> early;  // streams opened ahead (while the sources were scanned), or none
    std::optional<Key> key;         // --key-file: every stream it opens is authenticated (mover/auth.h)
    bool encrypt = false;           // --encrypt: and sealed (mover/channel.h)
    // Seconds to wait for the receiving end's report after Done; 0: as long as
    // it is alive (its last files may take long to verify). A serve giving out
    // a pull waits its --idle-timeout, so a client that never answers does not
    // hold the thread.
    int answer_timeout_s = 0;
};

// The receiving end's report after Done (a Report frame: its JSON), as the
// sending end shows it.
struct TransferReport {
    std::uint64_t files = 0, in_place = 0, bytes_written = 0;
    struct Failed {
        std::string path, why;  // the server's words: printable text only (peer_text.h)
    };
    std::vector<Failed> failed;
};
// Throws std::runtime_error("the server's report is malformed: ...") naming
// the field, never the JSON library's message.
TransferReport parse_report(const std::string& text);

struct SendProgress {
    std::atomic<std::uint64_t> bytes_read{0}, bytes_sent{0}, files_read{0}, files_failed{0};
};

class SendTransfer {
public:
    SendTransfer(Manifest manifest, SendSettings settings);
    ~SendTransfer();

    // Connects, sends the manifest, learns what the destination has, and starts
    // both pools. Throws with the server's message when it refuses.
    void start();
    // The same over a connection the receiving end opened (a pull: `serve`
    // sending to `slabcast stage --from`). The receiving end opens the other
    // streams too, and each is handed over with add_stream().
    // `control` stays the caller's, and must outlive finish().
    void start_on(Channel& control);
    // Carries blocks over a stream the receiving end opened, in the calling
    // thread, until the transfer ends; `c` stays the caller's.
    void add_stream(Channel& c);
    // Waits for the end; returns the server's report (JSON text). Throws on a
    // lost connection or a server error.
    std::string finish();

    void set_streams(int n);
    void set_readers(int n);
    int streams() const;
    int readers() const;
    Cipher cipher() const { return control_ ? control_->cipher() : Cipher::None; }
    const SendProgress& progress() const { return progress_; }
    // All of the manifest until the server's answer is in; then less what is in place.
    std::uint64_t bytes_to_send() const { return bytes_to_send_; }
    std::uint64_t files_to_send() const { return files_to_send_; }

private:
    struct Pool {
        std::vector<std::thread> threads;
        std::vector<std::unique_ptr<std::atomic<bool>>> quit;
    };

    // What a reader takes at a time: a whole small file, or a run of blocks of
    // a large one (so one large file keeps every reader busy).
    struct Piece {
        std::uint32_t file;
        std::uint64_t first_block, end_block;
    };
    // A file being read: its blocks' checksums, filled in by whichever reader
    // reads them; the reader that finishes its last piece sends FileEnd.
    struct FileReading {
        std::vector<std::uint64_t> sums;
        std::atomic<std::uint32_t> pieces_left{0};
        std::atomic<bool> failed{false};
    };
    static constexpr std::uint64_t kPieceBlocks = 4;
    // On plaintext streams a payload of at least kRefMinBytes is sent from
    // the page cache (sendfile) instead of copied into the ring and then into
    // the socket: one copy less for most of the bytes (the socket's copy took
    // a quarter of the sending end's CPU time). Smaller ones are copied, as
    // one sendfile costs more than their copy. At most kMaxRefs such payloads
    // wait at a time, each holding its file open; past that they are copied.
    static constexpr std::size_t kRefMinBytes = 64u << 10;
    static constexpr std::size_t kMaxRefs = 512;
    // Bytes read before the server's answer to the manifest is in (which
    // says what to skip): on a resume, about what is sent again.
    static constexpr std::uint64_t kAheadOfAnswer = 8u << 20;

    // Connects stream `index` and sends its Hello; `handshake` then checks the
    // server's proof. `stoppable`: stop_opening() shuts it down until opened().
    UniqueFd open_stream(int index, ClientHandshake& handshake, bool stoppable);
    void opened(int fd);
    void stop_opening();
    // On control_; `handshake`: of stream 0, when this end opened it (nullptr
    // for a pull's); `manifest`: to_json(manifest_), compressed (manifest_wire.h).
    void begin(ClientHandshake* handshake, const std::string& manifest);
    void take_answer();  // the Have, into in_place_ and have_; throws naming what is wrong with it
    void take_answer_or_stop();  // the same, and the transfer stops when it throws
    // Under pools_mutex_: streams up to `n` (none for a pull), each on its own
    // thread; ready once each has said Hello.
    std::vector<std::future<void>> open_streams(int n);
    // Until `flag` (ring_ready_, answer_in_) is set: false if the transfer
    // failed, `quit` was set (none: never) or `limit` passed first.
    bool wait_for(const std::atomic<bool>& flag, const std::atomic<bool>* quit,
                  std::chrono::milliseconds limit = std::chrono::milliseconds::max()) const;
    void plan_pieces();
    void reader_loop(const std::atomic<bool>* quit);
    void read_piece(const Piece& piece, Slot*& slot, const std::atomic<bool>* quit);
    bool read_block(int fd, std::uint64_t off, std::size_t len, std::uint8_t* data, bool reuse, std::uint64_t& sum,
                    bool& zeros);
    void piece_done(std::uint32_t file, Slot*& slot);
    void file_failed(std::uint32_t file, const std::string& why, Slot*& slot);
    void stream_loop(Channel& c, const std::atomic<bool>* quit, bool first);
    // Room for a frame of `payload` bytes in `slot`, handing it on and taking
    // a new one when full. nullptr when the ring was aborted.
    // `referenced`: the bytes of a payload sent from its file behind the frame (PayloadRef).
    std::uint8_t* reserve(Slot*& slot, std::size_t payload, bool aligned, std::size_t referenced = 0);
    // Sends a slot's frames, its referenced payloads from their files; then frees it.
    void send_slot(Channel& c, Slot* slot);
    void recycle(Slot* slot);  // back to the free queue, its files let go
    void fail(const std::string& why);
    void first_stream_ended();  // all sent (Done), or it stopped: finish() goes on

    Manifest manifest_;
    SendSettings settings_;
    std::uint64_t id_ = 0;
    std::unique_ptr<BlockRing> ring_;
    std::set<std::uint32_t> in_place_;  // written by take_answer before answer_in_, read after it
    std::map<std::uint32_t, std::set<std::uint64_t>> have_;
    std::atomic<bool> answer_in_{false};
    std::vector<Piece> pieces_;
    std::unique_ptr<FileReading[]> reading_;
    std::atomic<std::size_t> next_piece_{0};
    std::atomic<int> readers_running_{0};
    bool zero_copy_ = false;  // plaintext streams: payloads sent from the page cache (PayloadRef)
    std::atomic<std::size_t> refs_alive_{0};
    std::atomic<bool> reading_done_{false}, first_stream_done_{false}, failed_{false}, ring_ready_{false};
    std::mutex ended_mutex_;  // first_stream_done_ and failed_ change under it, for ended_
    std::condition_variable ended_;
    UniqueFd control_fd_;       // stream 0's descriptor, when this end opened it (closed with it)
    Channel* control_ = nullptr;  // stream 0
    std::unique_ptr<Channel> own_control_;  // stream 0, when this end made its channel
    StoppableSockets opening_;  // streams between their connect and the server's proof
    // A move's streams 1.. while they carry blocks: a failed transfer shuts
    // them down, or a stream blocked sending to a server that stopped reading
    // would hold the move until the peer timeout (fail()).
    StoppableSockets carrying_;
    mutable std::mutex pools_mutex_;
    Pool readers_, streams_;
    std::mutex error_mutex_;
    std::string error_;
    std::atomic<std::uint64_t> bytes_to_send_{0}, files_to_send_{0};
    SendProgress progress_;
};

}  // namespace slabcast::mover
