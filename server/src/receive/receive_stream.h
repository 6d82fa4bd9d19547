// One stream of the receiver daemon: its UDP port, its slab in shared memory
// and the thread that moves one into the other (Balman et al., 2012, section
// 4.2: one receiving thread per stream, pinned near its NIC, section 4.5).
#pragma once

#include "base/address_filter.h"
#include "base/status_reporter.h"
#include "base/udp.h"
#include "receive/slab_receiver.h"

#include "slabcast/fec_receiver.h"
#include "slabcast/slab_file.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace slabcast {

struct StreamSpec {
    int slab = 0;
    int port = 0;
};
// "SLAB:PORT" (receive --stream); throws std::invalid_argument naming the text.
StreamSpec parse_stream(const std::string& text);

// Figures a stream thread shares with the status thread.
struct StreamCounters {
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<std::uint64_t> finished_expected{0};
    std::atomic<std::uint64_t> finished_records{0};
    std::atomic<std::uint64_t> steps_finished{0};
    std::atomic<std::uint64_t> steps_dropped{0};
    std::atomic<std::uint64_t> landed{0};      // datagrams placed by the kernel's copy alone (BatchReceiver)
    std::atomic<std::uint64_t> copied_out{0};  // datagrams that landed amiss and were copied out
    std::atomic<std::uint64_t> fec_reports{0};  // loss reports sent back to the stream's sender
};

struct Stream {
    StreamSpec spec;
    int cpu = 0;
    int node = -1;
    SlabMapping slab;
    Socket socket;
    std::unique_ptr<SlabReceiver> receiver;
    std::unique_ptr<fec::GroupReceiver> fec;  // null: FEC datagrams are rejected (receive --fec-window 0)
    StreamCounters counters;
    RateMeter meter;        // the status thread's: this stream's Gbit/s each second
    AddressFilter allowed;  // senders this stream takes data from; empty: any
    std::thread thread;
};

// The stream's thread: pinned to s.cpu, it drains the socket `batch`
// datagrams per recvmmsg call (coalesced by UDP GRO when `gro`) into the slab
// until a stop is requested; with `land`, full raw run packets land straight
// in the slab (BatchReceiver, LandingSite). Datagrams with forward error
// correction go through s.fec, which hands on what came and what it rebuilt;
// after each step the stream publishes, the groups' loss goes back to the
// address they came from (slabcast/fec_report.h).
void receive_loop(Stream& s, int batch, bool gro, bool land);

}  // namespace slabcast
