// libFuzzer harness: the data mover's receiving side, as `slabcast serve` (and
// `stage --from`) runs it on what any client that reaches its port sends: a
// manifest and a sequence of frames, over real sockets (a socketpair per
// stream), through ReceiveTransfer's preparation (limits, the tree, the
// journal) and its block handling (the checks at arrival, the ring, the
// writer threads, part files, file checksums, the drain at Done), into a
// real directory in /dev/shm.
//
// Input (little-endian):
//   u8 flags: 1 = the second stream joins before the manifest is taken (it
//             must wait for it, reading nothing: the sender opens its streams
//             meanwhile), 2 = raw: the rest of the input goes to stream 0 as it is
//             (a Manifest frame of encoding 1 there is taken as zstd),
//             4 = the manifest is sent compressed, as `slabcast move` sends it
//   u16 L, L bytes: the manifest's JSON, sent as one Manifest frame
//   records to the end: u8 op (low 4 bits: kind; 0x10: the right checksum,
//     else 8 bytes of one follow the header fields; 0x20: on stream 1),
//     u32 file, u64 offset, u64 extra, u16 n, [u64 checksum], n payload bytes
// With "the right checksum" a FileEnd carries the file checksum of the blocks
// this input sent for that file, so whole files can arrive and go into place.
//
// Checks beyond "no crash, no sanitizer report": the transfer ends; it never
// writes more bytes than the input carried; nothing appears beside the
// destination; and a transfer that succeeds leaves no part file, and (but
// for raw inputs) has every file of its manifest in place with the declared size.
#include "fuzz_input.h"
#include "mover/manifest.h"
#include "mover/manifest_wire.h"
#include "mover/receive_transfer.h"
#include "mover/stream_io.h"
#include "mover/wire.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

using namespace slabcast::mover;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kId = 0xf022;


std::string encode(const Frame& f, const std::string& payload) {
    std::string bytes(kHeaderBytes, '\0');
    Frame out = f;
    out.length = static_cast<std::uint32_t>(payload.size());
    encode_header(out, reinterpret_cast<std::uint8_t*>(bytes.data()));
    return bytes + payload;
}

struct Pair {
    int ends[2] = {-1, -1};
    Pair() {
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) __builtin_trap();
        const int big = 1 << 20;
        ::setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        ::setsockopt(ends[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    }
    ~Pair() {
        ::close(ends[0]);
        ::close(ends[1]);
    }
    // What the input sends, then the end of the stream.
    void send(const std::string& bytes) {
        if (!bytes.empty()) write_full(ends[0], bytes.data(), bytes.size());
        ::shutdown(ends[0], SHUT_WR);
    }
};

const fs::path& base() {
    static const fs::path dir = "/dev/shm/slabcast-fuzz-mover-" + std::to_string(::getpid());
    return dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);
    fs::create_directories(base());
    std::atexit([] {  // the run's directory in /dev/shm goes with the process
        std::error_code ignored;
        fs::remove_all(base(), ignored);
    });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzInput in(data, size);
    std::uint8_t flags = 0;
    if (!in.take(flags)) return 0;
    std::string stream0, stream1, manifest_text;
    if (flags & 2) {
        stream0 = in.bytes(in.left());
    } else {
        std::uint16_t length = 0;
        if (!in.take(length)) return 0;
        manifest_text = in.bytes(length);
        const std::uint32_t encoding = flags & 4 ? kManifestZstd : kManifestJson;
        const std::string sent_manifest = flags & 4 ? compress_manifest(manifest_text) : manifest_text;
        stream0 = encode(Frame{Kind::Manifest, kId, encoding, 0, 0, checksum(sent_manifest.data(), sent_manifest.size()),
                               sent_manifest.size()},
                         sent_manifest);
        std::map<std::uint32_t, std::map<std::uint64_t, std::uint64_t>> sent;  // file -> offset -> block checksum
        for (;;) {
            std::uint8_t op = 0;
            Frame f;
            std::uint16_t n = 0;
            if (!in.take(op) || !in.take(f.file) || !in.take(f.offset) || !in.take(f.extra) || !in.take(n)) break;
            if (!(op & 0x10) && !in.take(f.checksum)) break;
            f.kind = static_cast<Kind>(op & 0x0f);
            f.transfer = kId;
            const std::string payload = in.bytes(n);
            if (op & 0x10) {
                if (f.kind == Kind::Zeros) f.checksum = zeros_checksum(std::min<std::uint64_t>(f.extra, 1u << 20));
                else if (f.kind == Kind::FileEnd) {
                    std::vector<std::uint64_t> sums;
                    for (const auto& [offset, sum] : sent[f.file]) sums.push_back(sum);
                    f.checksum = file_checksum(sums.data(), sums.size());
                } else f.checksum = checksum(payload.data(), payload.size());
            }
            if (f.kind == Kind::Data || f.kind == Kind::Zeros) sent[f.file][f.offset] = f.checksum;
            (op & 0x20 ? stream1 : stream0) += encode(f, payload);
        }
    }

    const fs::path root = base() / "dest";
    ReceiveLimits limits;
    limits.manifest_bytes = 1 << 16;
    limits.entries = 64;
    limits.blocks = 4096;
    std::uint64_t written = 0;
    bool succeeded = false;
    {
        // No wait for late streams: the input's are all there.
        ReceiveTransfer t(kId, root, "", ReceiveSettings{1, 1u << 20, (flags & 4) != 0, "fuzz", limits, 0});
        Pair first, second;
        std::thread joiner;
        const bool early = (flags & 1) != 0;
        if (!stream1.empty() || early) {
            joiner = std::thread([&] {
                while (!early && !t.prepared() && !t.finished()) std::this_thread::yield();
                try {
                    t.run_stream(second.ends[1]);
                } catch (const std::runtime_error&) {
                }
            });
            second.send(stream1);
        }
        first.send(stream0);
        t.run_first_stream(first.ends[1]);
        if (!t.finished()) __builtin_trap();
        if (joiner.joinable()) {
            ::shutdown(second.ends[1], SHUT_RDWR);
            joiner.join();
        }
        written = t.bytes_written();
        succeeded = t.succeeded();
    }
    if (written > size) __builtin_trap();
    for (const auto& e : fs::directory_iterator(base()))
        if (e.path() != root) __builtin_trap();  // nothing beside the destination
    if (succeeded) {
        if (!(flags & 2)) {  // (raw: the manifest is somewhere in the input's bytes, perhaps compressed)
            const Manifest m = manifest_from_json(manifest_text);
            for (const auto& f : m.files) {
                std::error_code ec;
                if (fs::file_size(root / f.path, ec) != f.size || ec) __builtin_trap();
            }
        }
        for (const auto& e : fs::recursive_directory_iterator(root))
            if (e.path().filename().string().find(".slabcast-part") != std::string::npos) __builtin_trap();
    }
    fs::remove_all(root);
    return 0;
}
