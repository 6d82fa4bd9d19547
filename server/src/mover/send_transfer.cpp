// The sending side of one transfer: stream 0, the manifest and the
// receiving end's Have answer, the back end (one thread per stream, each
// sending whole ring slots; opening them is send_streams.cpp), and the end
// (Done, the report). The front end, reading files into the ring, is
// send_readers.cpp (Balman et al., 2012, section 5.3: front end and back end
// tied by a set of shared memory blocks).
#include "mover/send_transfer.h"

#include "mover/manifest_wire.h"
#include "mover/peer_text.h"
#include "mover/stream_io.h"
#include "mover/wire.h"
#include "slabcast/json_file.h"

#include <nlohmann/json.hpp>
#include <sys/socket.h>

#include <charconv>
#include <chrono>
#include <future>
#include <random>
#include <stdexcept>
#include <thread>

namespace slabcast::mover {
using nlohmann::json;

namespace {

// A file's index as a key of the Have's "blocks" (JSON keys are text): digits
// only, within uint32, as whole_number holds the values to. std::stoul would
// take "-1" or "4294967296", and the cast would name another file.
std::uint32_t file_index(const std::string& key) {
    std::uint32_t index = 0;
    const char* end = key.data() + key.size();
    const auto [stop, ec] = std::from_chars(key.data(), end, index);
    if (ec != std::errc() || stop != end) throw std::runtime_error("'" + key + "' is not a file's index");
    return index;
}

}  // namespace

TransferReport parse_report(const std::string& text) {
    const std::string what = "the server's report is malformed";
    json r;
    try {
        r = parse_peer_json(text);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(what + ": " + e.what());
    }
    if (!r.is_object()) throw std::runtime_error(what + ": not a JSON object");
    // Each field by name and type (json_file::field names the field, never casts).
    using json_file::field;
    TransferReport report;
    report.files = field<std::uint64_t>(r, "files", what);
    report.in_place = field<std::uint64_t>(r, "in_place", what);
    report.bytes_written = field<std::uint64_t>(r, "bytes_written", what);
    if (!r.contains("failed") || !r.at("failed").is_array())
        throw std::runtime_error(what + ": field 'failed' must be a list");
    for (const auto& f : r.at("failed"))
        report.failed.push_back({printable(field<std::string>(f, "path", what + " (a failed file)")),
                                 printable(field<std::string>(f, "why", what + " (a failed file)"))});
    return report;
}

SendTransfer::SendTransfer(Manifest manifest, SendSettings settings)
    : manifest_(std::move(manifest)), settings_(std::move(settings)) {
    if (settings_.streams < 1 || settings_.streams > 128) throw std::invalid_argument("--streams must be 1..128");
    if (settings_.readers < 1 || settings_.readers > 128) throw std::invalid_argument("--readers must be 1..128");
    std::random_device rd;
    id_ = settings_.transfer_id ? settings_.transfer_id : (static_cast<std::uint64_t>(rd()) << 32) | rd();
}

SendTransfer::~SendTransfer() {
    if (ring_) ring_->abort();
    set_readers(0);
    set_streams(0);
    control_fd_.reset();
}

void SendTransfer::start() {
    // The manifest is made while stream 0 connects.
    auto text = std::async(std::launch::async, [this] { return compress_manifest(to_json(manifest_)); });
    ClientHandshake handshake(settings_.key, settings_.encrypt);
    control_fd_ = open_stream(0, handshake, false);
    own_control_ = std::make_unique<Channel>(handshake.channel(control_fd_.get()));
    control_ = own_control_.get();
    begin(&handshake, text.get());
}

void SendTransfer::start_on(Channel& control) {
    settings_.host.clear();  // no connections of its own to open
    settings_.streams = 1;
    control_ = &control;
    begin(nullptr, compress_manifest(to_json(manifest_)));
}

void SendTransfer::add_stream(Channel& c) {
    // The receiving end opens it once it has answered the manifest, which may
    // be before this end has read that answer and set up its ring.
    if (!wait_for(ring_ready_, nullptr, std::chrono::seconds(30))) throw std::runtime_error("the transfer did not start");
    const std::atomic<bool> never{false};
    stream_loop(c, &never, false);
}

void SendTransfer::begin(ClientHandshake* handshake, const std::string& text) {
    // The other streams connect and say Hello while stream 0 sends the
    // manifest and the server takes it, and carry blocks the moment the ring
    // is ready: not two round trips after the Have (CHANGELOG.md,
    // issue 22). Each checks the server's proof on its own. Stream 0's own
    // thread is the first of the pool; it too waits for the ring.
    std::vector<std::future<void>> hellos;
    {
        std::lock_guard lock(pools_mutex_);
        streams_.quit.push_back(std::make_unique<std::atomic<bool>>(false));
        streams_.threads.emplace_back([this, quit = streams_.quit.back().get()] {
            if (wait_for(ring_ready_, quit)) stream_loop(*control_, quit, true);
        });
        hellos = open_streams(settings_.streams);
    }
    try {
        for (std::size_t at = 0; at < text.size() || at == 0;) {  // the manifest, as blocks
            const std::size_t n = std::min<std::size_t>(text.size() - at, manifest_.block);
            Frame f{Kind::Manifest, id_, kManifestZstd, 0, at, checksum(text.data() + at, n), text.size()};
            write_frame(*control_, f, text.data() + at, n);
            at += n;
            if (at >= text.size()) break;
        }
    } catch (const std::exception&) {
        // A server that refused the Hello closed on the manifest: its reason comes first.
        if (handshake) handshake->expect_proof(control_fd_.get(), settings_.peer_timeout_s);
        throw;
    }
    // The manifest went out behind the Hello, not a round trip later; nothing
    // the server says is believed before its proof.
    if (handshake) handshake->expect_proof(control_fd_.get(), settings_.peer_timeout_s);
    // A move sends blocks at once, without waiting the round trip for the
    // server's answer and its preparing (150 ms for ten thousand files on the
    // 32 ms testbed path), so that its streams are through slow start's first
    // round trips by then: what the destination has is skipped from the
    // moment the answer is in, and the server drops what came before it that
    // it had (a block of a file in place, a block written already). So that a
    // resume sends little again, at most about kAheadOfAnswer bytes are read
    // before the answer. A pull waits for it: the receiving end opens its
    // other streams only after it has answered.
    const bool ahead = !settings_.host.empty();
    if (!ahead) take_answer_or_stop();
    plan_pieces();
    zero_copy_ = control_->cipher() == Cipher::None;
    const std::size_t slot = manifest_.block + 4096;
    ring_ = std::make_unique<BlockRing>(std::max<std::size_t>(4, settings_.ring_bytes / slot), slot);
    ring_ready_ = true;
    if (failed_) ring_->abort();  // a stream failed to open before there was a ring to stop
    set_readers(settings_.readers);
    if (ahead) take_answer_or_stop();
    // Every stream has said Hello before the transfer can end: the server
    // must know each before Done (one arriving after it would be refused).
    for (auto& h : hellos) h.wait();
}

void SendTransfer::take_answer_or_stop() {
    try {
        take_answer();
    } catch (const std::exception& e) {
        fail(e.what());  // readers and streams already running stop
        throw;
    }
}

// The Have: which files are in place, which blocks of others are written.
// Read while blocks already go out; published to the readers at once.
void SendTransfer::take_answer() {
    Frame reply;
    std::string payload;
    if (!read_header(*control_, reply))
        throw std::runtime_error("the server closed the connection after the manifest");
    // Judged before a byte of it is read: the server lists at most
    // kMaxHaveBytes of what the destination holds, and this end reads no more.
    if (reply.length > kMaxHaveBytes)
        throw std::runtime_error(
            (reply.kind == Kind::Have ? "the server's answer to the manifest (Have) is "
                                      : "the server answered the manifest with a frame of ") +
            std::to_string(reply.length) + " bytes, above the " + std::to_string(kMaxHaveBytes) +
            " bytes (32 MiB) an answer may hold: refused");
    read_payload(*control_, reply, payload);
    if (reply.kind == Kind::Error) throw std::runtime_error("the server refused the transfer: " + printable(payload));
    if (reply.kind != Kind::Have) throw std::runtime_error("the server answered the manifest with something else");
    try {
        const json have = parse_peer_json(payload);
        using json_file::whole_number;
        auto list = [&](const char* key, json::value_t type, const char* what) -> const json& {
            if (!have.is_object() || !have.contains(key))
                throw std::runtime_error(std::string("field '") + key + "' is missing");
            if (have.at(key).type() != type) throw std::runtime_error(std::string("field '") + key + "' must be " + what);
            return have.at(key);
        };
        // Every file a file of the manifest, every offset a block of it: what
        // is kept of the answer is bounded by what this end declared.
        auto file_of = [&](std::uint32_t file) -> const ManifestFile& {
            if (file >= manifest_.files.size())
                throw std::runtime_error("file " + std::to_string(file) + " is not in the manifest (it lists " +
                                         std::to_string(manifest_.files.size()) + ")");
            return manifest_.files[file];
        };
        for (const auto& i : list("complete", json::value_t::array, "a list of files")) {
            const auto file = whole_number<std::uint32_t>(i, "a file");
            file_of(file);
            in_place_.insert(file);
        }
        for (const auto& [key, offsets] : list("blocks", json::value_t::object, "an object of lists").items()) {
            const std::uint32_t file = file_index(key);
            const ManifestFile& m = file_of(file);
            if (!offsets.is_array())
                throw std::runtime_error("field 'blocks' must be an object of lists (file " + key + " has none)");
            for (const auto& o : offsets) {
                const auto offset = whole_number<std::uint64_t>(o, "an offset");
                if (offset % manifest_.block != 0 || offset >= m.size)
                    throw std::runtime_error("offset " + std::to_string(offset) + " is not a block of '" + m.path + "'");
                have_[file].insert(offset);
            }
        }
    } catch (const std::exception& e) {  // it may quote the answer (a file's key): printable text only
        throw std::runtime_error("the server's answer is malformed: " + printable(e.what()));
    }
    for (const std::uint32_t file : in_place_) {
        --files_to_send_;
        bytes_to_send_ -= manifest_.files[file].size;
    }
    answer_in_ = true;  // in_place_ and have_ are read from here on, never written
}

void SendTransfer::stream_loop(Channel& c, const std::atomic<bool>* quit, bool first) {
    try {
        while (!*quit) {
            Slot* slot = nullptr;
            const auto r = ring_->take_full(slot, 200);
            if (r == BlockRing::Take::Closed) break;
            if (r == BlockRing::Take::Timeout) continue;
            send_slot(c, slot);
        }
        if (failed_) {
            if (first) first_stream_ended();
            return;
        }
        if (first) {
            // Not before the answer is in: the server must have answered the
            // manifest this Done ends, and the answer may still stop the transfer.
            if (!*quit && wait_for(answer_in_, quit) && !failed_)
                write_frame(c, Frame{Kind::Done, id_, 0, 0, 0, 0, manifest_.files.size()});
            first_stream_ended();
        } else {
            write_frame(c, Frame{Kind::Bye, id_});
            ::shutdown(c.fd(), SHUT_WR);
        }
    } catch (const std::exception& e) {
        fail(std::string("sending: ") + e.what());
        if (first) first_stream_ended();
    }
}

void SendTransfer::send_slot(Channel& c, Slot* slot) {
    const std::size_t n = slot->used - slot->begin;
    try {
        const std::uint8_t* at = slot->data + slot->begin;
        if (c.cipher() != Cipher::None && slot->begin == 4096 - kHeaderBytes) {
            // A whole block: its header sealed alone, so that the payload's
            // records fall where the receiving end reads them, and open
            // straight into its ring.
            c.write_full(at, kHeaderBytes);
            c.write_full(at + kHeaderBytes, n - kHeaderBytes);
        } else {
            std::size_t from = slot->begin;  // the slot's bytes up to each referenced payload, then it
            for (const PayloadRef& ref : slot->refs) {
                c.write_full(slot->data + from, ref.at - from, true);
                c.send_file(ref.fd->get(), ref.offset, ref.length);
                from = ref.at;
            }
            c.write_full(slot->data + from, slot->used - from);
        }
    } catch (...) {
        recycle(slot);
        throw;
    }
    progress_.bytes_sent += n + slot->referenced;
    recycle(slot);
}

void SendTransfer::recycle(Slot* slot) {
    refs_alive_ -= slot->refs.size();
    slot->refs.clear();  // their files close with the last reference
    slot->referenced = 0;
    ring_->put_free(slot);
}

void SendTransfer::first_stream_ended() {
    {
        std::lock_guard lock(ended_mutex_);
        first_stream_done_ = true;
    }
    ended_.notify_all();
}

void SendTransfer::fail(const std::string& why) {
    {
        std::lock_guard lock(error_mutex_);
        if (!error_.empty()) return;
        error_ = why;
    }
    {
        std::lock_guard lock(ended_mutex_);
        failed_ = true;
    }
    ended_.notify_all();
    if (ring_ready_) ring_->abort();  // (streams may fail before the ring is made: begin() stops it then)
    // A stream blocked in a send to a server that stopped reading (it refused
    // the transfer, or was stopped) returns at once, not after the peer
    // timeout. Stream 0 stops only sending: the server's reason may still be
    // on its way to finish(). A pull's streams are the serving end's own.
    if (!settings_.host.empty()) {
        carrying_.stop();
        if (control_fd_.valid()) ::shutdown(control_fd_.get(), SHUT_WR);
    }
}

std::string SendTransfer::finish() {
    // Wait without holding the pools: they may still be resized meanwhile.
    {
        std::unique_lock lock(ended_mutex_);
        ended_.wait(lock, [&] { return failed_ || first_stream_done_; });
    }
    {
        std::lock_guard lock(pools_mutex_);
        for (auto& t : readers_.threads) t.join();
        readers_.threads.clear();
        readers_.quit.clear();
        streams_.threads.front().join();  // stream 0 ended with Done (or an error)
    }
    // What the server says: its report, or why it stopped.
    timeval wait{failed_ ? 2 : settings_.answer_timeout_s, 0};
    ::setsockopt(control_->fd(), SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    Frame f;
    std::string payload;
    std::string server_says;
    try {
        while (read_frame(*control_, f, payload)) {
            if (f.kind == Kind::Report || f.kind == Kind::Error) {
                // A report is parsed (parse_report), an error shown: as printable text only.
                server_says = f.kind == Kind::Error ? printable(payload) : payload;
                break;
            }
        }
    } catch (const std::exception& e) {
        if (!failed_) fail(std::string("waiting for the report: ") + e.what());
    }
    if (f.kind == Kind::Error && !server_says.empty()) fail("the server stopped the transfer: " + server_says);
    {
        std::lock_guard lock(pools_mutex_);
        for (std::size_t k = 1; k < streams_.threads.size(); ++k) streams_.threads[k].join();
        streams_.threads.clear();
        streams_.quit.clear();
    }
    if (failed_) {
        if (f.kind == Kind::Error && !server_says.empty())
            throw std::runtime_error("the server stopped the transfer: " + server_says);
        std::lock_guard lock(error_mutex_);
        throw std::runtime_error(error_);
    }
    if (f.kind != Kind::Report) throw std::runtime_error("the server closed the connection without a report");
    return server_says;
}

}  // namespace slabcast::mover
