// libFuzzer harness: any datagram into the receiver's store path, against a
// real slab in /dev/shm: quad packets, run packets and step stamps
// (docs/wire-format.md; the corpus holds all three, so the run packet's and
// the stamp's magic are there to mutate from).
// ASan catches a write outside the slab; the checks below catch accounting
// that stops adding up.
#include "receive/slab_receiver.h"

#include "slabcast/quad_packet.h"
#include "slabcast/slab_file.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

using namespace slabcast;

namespace {

const Dims kDims{24, 20, 16};
constexpr int kDepth = 8;  // 2 slabs; the harness receives slab 1 (planes 7..15)

struct Target {
    std::string dir = "/dev/shm/slabcast-fuzz-" + std::to_string(::getpid());
    SlabGeometry geometry = slab_geometry(kDims, kDepth, 1, 1);
    SlabMapping slab;
    std::unique_ptr<SlabReceiver> receiver;
    std::int64_t now = 0;

    Target() {
        std::filesystem::create_directories(dir);
        slab = SlabMapping::create(dir + "/f.slab1", kDims, kDepth, geometry, "density");
        receiver = std::make_unique<SlabReceiver>(1, slab, nullptr, 1'000'000);
        std::atexit([] { std::filesystem::remove_all("/dev/shm/slabcast-fuzz-" + std::to_string(::getpid())); });
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Target t;
    // Several datagrams per input (a 2-byte length before each), so that step
    // changes, duplicates and staleness are reached too.
    std::size_t at = 0;
    while (at + 2 <= size) {
        const std::size_t length = std::min<std::size_t>(size - at - 2, data[at] | (data[at + 1] << 8));
        at += 2;
        const std::uint64_t packets = t.receiver->total_packets(), rejected = t.receiver->total_rejected(),
                            stamps = t.receiver->total_stamps();
        const PacketVerdict v = t.receiver->handle(data + at, length, t.now += 400'000);
        if (v == PacketVerdict::Rejected && t.receiver->total_rejected() != rejected + 1) __builtin_trap();
        if (v == PacketVerdict::Stored && t.receiver->total_packets() != packets + 1) __builtin_trap();
        if ((v == PacketVerdict::Stamp) != (t.receiver->total_stamps() == stamps + 1)) __builtin_trap();
        // A stamp times a step and stores nothing.
        if (v == PacketVerdict::Stamp && t.receiver->total_packets() != packets) __builtin_trap();
        at += length;
    }
    const StepReport& r = t.receiver->current();
    if (r.records > r.expected) __builtin_trap();  // distinct owned values can never exceed the slab's
    t.receiver->post_counters();
    return 0;
}
