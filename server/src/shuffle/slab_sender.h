// One stream's sending side: a slab's step packed into packets (SlabWalker),
// batched with GSO (DatagramBatch), paced (Pacer) and sent on a connected UDP
// socket, a batch at a time so that the caller can stop between batches
// (Balman et al., 2012, section 4.2, figure 4). `slabcast shuffle` sends staged
// steps with it; libslabcast sends a simulation's arrays with it.
#pragma once

#include "base/udp.h"
#include "shuffle/datagram_batch.h"
#include "shuffle/parallel_packer.h"
#include "shuffle/slab_walker.h"

#include "slabcast/fec_report.h"
#include "slabcast/fec_sender.h"
#include "slabcast/pacer.h"
#include "slabcast/run_codec.h"
#include "slabcast/step_stamp.h"
#include "slabcast/volume.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace slabcast {

struct SlabSenderOptions {
    Dims dims;
    std::int64_t z_begin = 0, z_end = 0;  // the planes sent, ghost plane included
    std::int64_t ghost_planes = 0;        // how many of them, from z_begin, are the slab's ghost plane
    std::int32_t slab = 0;                // the stream's slab index, named in run packets
    SendOrder order = SendOrder::Scan;
    WireFormat wire = WireFormat::Run;
    run::CodecChoice codec;
    double rate_bps = 0;        // 0: unpaced
    std::string to;             // HOST:PORT
    std::string bind;           // local address ("" : the kernel's choice)
    int sndbuf_mb = 16;
    int most_batch = 28;        // packets a sendmmsg at most
    bool gso = true;
    int encode_threads = 1;     // > 1: packed on that many threads (shuffle/parallel_packer.h)
    // Forward error correction (slabcast/fec_sender.h): each packet behind
    // its shim, m parity datagrams for every k; packets 16 bytes shorter.
    fec::Choice fec;
    std::string who = "send";   // names the sender in messages
};

class SlabSender {
public:
    // Opens and connects the socket. Throws std::invalid_argument for a bad
    // option, std::runtime_error when the destination cannot be reached.
    explicit SlabSender(const SlabSenderOptions& o);

    // Starts step `step` from `planes`, the planes [z_begin, z_end) x fastest;
    // they must stay valid until the step ends. A step in progress is dropped.
    // `lost`: the ages of a recorded step, whose lost values are left out
    // (SlabWalker::skip_lost; one packing thread, run packets in scan order).
    void begin_step(std::int32_t step, const float* planes, const std::uint8_t* lost = nullptr);
    // Packs and sends the next batch of the step, paced; false when nothing
    // was left to send (the step is over). `stop` is polled while the kernel
    // cannot take the batch; `on_refused` is called when the receiver's host
    // refused a datagram (nobody listening: UDP goes on).
    bool send_batch(const std::function<bool()>& stop, const std::function<void()>& on_refused);

    // Stops reading the step's values (its counts stay until the next begins).
    void end_step();
    std::uint64_t values_in_step() const { return values_in_step_; }
    std::uint64_t packets_in_step() const { return packets_in_step_; }
    std::uint64_t bytes_in_step() const { return bytes_in_step_; }
    // Step stamps sent (slabcast/step_stamp.h), two a step, apart from the packets.
    std::uint64_t stamps_sent() const { return stamps_sent_; }
    std::uint64_t total_packets() const { return packer_ ? packer_->total_packets() : walker_->total_packets(); }
    // Forward error correction's parity datagrams and their bytes, all steps
    // (their bytes are in bytes_in_step too).
    std::uint64_t parity_packets() const { return parity_packets_; }
    std::uint64_t parity_bytes() const { return parity_bytes_; }
    // Parity datagrams a group now (0: no FEC), and the receiver's loss
    // reports taken (fec.adaptive(): the parity follows them).
    int fec_parity() const { return fec_ ? fec_->m() : 0; }
    std::uint64_t loss_reports() const { return loss_reports_; }
    std::uint64_t total_values() const { return packer_ ? packer_->total_values() : walker_->total_records(); }
    std::size_t fixed_packet_bytes() const {
        return packer_ ? packer_->fixed_packet_bytes() : walker_->fixed_packet_bytes();
    }
    // Threads packing the step (1: the sending thread itself).
    int encode_threads() const { return packer_ ? packer_->parts() : 1; }
    int fd() const { return socket_.fd(); }

private:
    using Stop = std::function<bool()>;
    using Refused = std::function<void()>;
    // A batch of packets, behind their shims with their parity when FEC is on.
    void send(DatagramBatch& batch, const Stop& stop, const Refused& on_refused);
    // One batch onto the wire, paced; a step's stamp before and after its first.
    void transmit(DatagramBatch& batch, const Stop& stop, const Refused& on_refused);
    // A datagram of `length` bytes written at fec_batch_->next() joins the
    // batch, which goes out when full.
    void put(std::size_t length, const Stop& stop, const Refused& on_refused);
    // A parity datagram copied into the batch (put), and counted.
    void put_parity(const fec::ParityDatagram& p, const Stop& stop, const Refused& on_refused);
    // A step's end: every open group closed and its parity sent.
    void flush_parity(const Stop& stop, const Refused& on_refused);
    // The receiver's loss reports waiting on the socket taken, and the
    // parity set for the next groups (an adaptive code, at a step's start).
    void follow_loss_reports();
    void send_stamp(const Refused& on_refused);

    SlabSenderOptions o_;
    Pacer pacer_;
    Socket socket_;
    bool gso_ = false;
    std::optional<SlabWalker> walker_;        // encode_threads <= 1: packing on the sending thread
    std::optional<DatagramBatch> batch_;      // the same
    std::unique_ptr<ParallelPacker> packer_;  // encode_threads > 1
    std::optional<fec::GroupSender> fec_;     // --fec
    std::optional<DatagramBatch> fec_batch_;  // the packets behind their shims, and parity
    std::uint64_t parity_packets_ = 0, parity_bytes_ = 0;
    fec::LossTracker loss_;
    std::uint64_t loss_reports_ = 0;
    const float* planes_ = nullptr;
    std::int32_t step_ = -1;
    std::uint64_t values_in_step_ = 0, packets_in_step_ = 0, bytes_in_step_ = 0;
    stamp::StepStamp stamp_;  // the step's, once its first batch went
    bool stamp_due_ = false;  // the step's first batch has yet to leave
    std::uint64_t stamps_sent_ = 0;
};

}  // namespace slabcast
