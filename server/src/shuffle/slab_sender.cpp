#include "shuffle/slab_sender.h"

#include "slabcast/clock.h"
#include "slabcast/fec_packet.h"
#include "slabcast/quad_packet.h"
#include "slabcast/step_stamp.h"

#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast {
namespace {

// Send at most ~250 us of traffic per sendmmsg: small bursts for the
// receiver's socket buffer, and a caller polling between batches (a newer
// sync) is answered within that time.
int batch_packets(double rate_bps, int most) {
    if (rate_bps <= 0) return most;
    return std::clamp(static_cast<int>(rate_bps * 250e-6 / (8.0 * quad::kMaxPacketBytes)), 1, most);
}

}  // namespace

SlabSender::SlabSender(const SlabSenderOptions& o)
    : o_(o), pacer_(o.rate_bps) {
    const Endpoint to = parse_endpoint(o.to);
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&to.addr);
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&to.addr);
    if ((to.addr.ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port) == 0)
        throw std::invalid_argument("address '" + o.to + "': port 0 sends nowhere; name the receiver's port");
    socket_ = Socket(open_udp_socket(to.addr.ss_family));
    raise_buffer(socket_.fd(), false, o.sndbuf_mb << 20, o.who);
    gso_ = o.gso && enable_gso(socket_.fd(), static_cast<int>(quad::kMaxPacketBytes));
    if (o.gso && !gso_) spdlog::warn("{}: UDP GSO unavailable here; sending one datagram per packet", o.who);
    // On a host with several NICs, the data leaves from the one named here.
    if (!o.bind.empty()) {
        const bool has_port = o.bind.find(':') != std::string::npos;  // (IPv6: [ADDR]:PORT)
        bind_socket(socket_.fd(), parse_endpoint(has_port ? o.bind : o.bind + ":0"));
    }
    if (::connect(socket_.fd(), reinterpret_cast<const sockaddr*>(&to.addr), to.length) != 0)
        throw std::runtime_error("cannot send UDP to " + o.to + ": " + std::strerror(errno));
    const int packets = batch_packets(o.rate_bps, o.most_batch);
    // With FEC a packet goes behind its shim, and the datagram stays the size it is without.
    const std::size_t most_packet_bytes = o.fec.on() ? fec::kMaxShardBytes : quad::kMaxPacketBytes;
    if (o.encode_threads > 1) {
        const PackerLayout layout{o.dims, o.z_begin, o.z_end, o.ghost_planes, o.slab, o.order, o.wire, o.codec,
                                  most_packet_bytes};
        packer_ = std::make_unique<ParallelPacker>(layout, o.encode_threads, packets, gso_);
    } else {
        walker_.emplace(o.dims, o.z_begin, o.z_end, o.order, o.wire, o.codec, o.ghost_planes, most_packet_bytes);
        batch_.emplace(packets, quad::kMaxPacketBytes, gso_);
    }
    if (o.fec.on()) {
        fec_.emplace(o.fec.k, o.fec.m, o.fec.depth);
        fec_batch_.emplace(packets, fec::kMaxDatagramBytes, gso_);
    }
}

void SlabSender::begin_step(std::int32_t step, const float* planes, const std::uint8_t* lost) {
    if (lost && packer_) throw std::logic_error("values lost in a recording are left out on one packing thread only");
    if (packer_) packer_->begin_step(step, planes);
    if (walker_) {
        walker_->reset();
        walker_->skip_lost(lost);
    }
    planes_ = planes;
    step_ = step;
    values_in_step_ = packets_in_step_ = bytes_in_step_ = 0;
    if (o_.fec.adaptive()) follow_loss_reports();
    // The pacer is not restarted: with steps back to back, the moments spent
    // between them are made up (within its burst limit) and the rate holds
    // over any window, not only within a step.
}

void SlabSender::end_step() {
    if (packer_) packer_->end_step();
    planes_ = nullptr;
}

bool SlabSender::send_batch(const std::function<bool()>& stop, const std::function<void()>& on_refused) {
    if (!planes_) return false;
    if (packer_) {
        ParallelPacker::Batch* batch = packer_->take();
        if (!batch) {
            end_step();
            flush_parity(stop, on_refused);
            return false;
        }
        values_in_step_ += batch->values;
        send(batch->datagrams, stop, on_refused);
        packer_->give_back();
        return true;
    }
    // Up to a batch of packets packed straight from the step's values, back to back.
    values_in_step_ += walker_->fill_batch(*batch_, planes_, step_, o_.slab).values;
    if (batch_->count() == 0) {
        planes_ = nullptr;
        flush_parity(stop, on_refused);
        return false;
    }
    send(*batch_, stop, on_refused);
    return true;
}

void SlabSender::send(DatagramBatch& batch, const Stop& stop, const Refused& on_refused) {
    // The step's first packet leaves with this batch: its stamp goes before
    // it and once more after it, so that one lost datagram does not lose the time.
    stamp_due_ = packets_in_step_ == 0;
    packets_in_step_ += static_cast<std::uint64_t>(batch.count());
    if (!fec_) {
        transmit(batch, stop, on_refused);
        return;
    }
    // Each packet behind its shim, each group's parity among them as the
    // group sender spreads it (a copy of the packet: 9 KB against the
    // parity's arithmetic over it).
    fec_batch_->clear();
    batch.for_each_packet([&](const std::uint8_t* packet, std::size_t size) {
        std::uint8_t* shim = fec_batch_->next();
        std::memcpy(shim + fec::kDataHeaderBytes, packet, size);
        const auto& parity = fec_->add(shim, shim + fec::kDataHeaderBytes, size);
        put(fec::kDataHeaderBytes + size, stop, on_refused);
        for (const fec::ParityDatagram& p : parity) put_parity(p, stop, on_refused);
    });
    if (fec_batch_->count() > 0) transmit(*fec_batch_, stop, on_refused);
}

void SlabSender::put(std::size_t length, const Stop& stop, const Refused& on_refused) {
    fec_batch_->add(length);
    if (!fec_batch_->full()) return;
    transmit(*fec_batch_, stop, on_refused);
    fec_batch_->clear();
}

void SlabSender::put_parity(const fec::ParityDatagram& p, const Stop& stop, const Refused& on_refused) {
    std::memcpy(fec_batch_->next(), p.bytes, p.length);
    put(p.length, stop, on_refused);
    ++parity_packets_;
    parity_bytes_ += p.length;
}

void SlabSender::flush_parity(const Stop& stop, const Refused& on_refused) {
    if (!fec_) return;
    fec_batch_->clear();
    for (const fec::ParityDatagram& p : fec_->flush()) put_parity(p, stop, on_refused);
    if (fec_batch_->count() > 0) transmit(*fec_batch_, stop, on_refused);
}

void SlabSender::follow_loss_reports() {
    // The socket is connected to the receiver's: what it reads came from there.
    std::uint8_t bytes[fec::kReportBytes + 1];
    for (int i = 0; i < 256; ++i) {
        const ssize_t n = ::recv(socket_.fd(), bytes, sizeof bytes, MSG_DONTWAIT);
        if (n < 0 && (errno == ECONNREFUSED || errno == EINTR)) continue;  // an ICMP error of an earlier send
        if (n < 0) break;
        fec::Report r;
        if (!fec::parse_report(bytes, static_cast<std::size_t>(n), r) || r.slab != o_.slab) continue;
        loss_.take(r);
        ++loss_reports_;
    }
    const int m = fec::parity_for_loss(fec_->k(), loss_.datagrams(), loss_.lost(), loss_.dispersion(), o_.fec.m_low,
                                       o_.fec.m);
    if (m == fec_->m()) return;
    spdlog::info("{}: FEC parity {} a group of {} (was {}): the receiver lost {:.3f}% of the last {:.0f} datagrams, "
                 "bunched {:.1f}x", o_.who, m, fec_->k(), fec_->m(),
                 loss_.datagrams() > 0 ? 100.0 * loss_.lost() / loss_.datagrams() : 0.0, loss_.datagrams(),
                 loss_.dispersion());
    fec_->set_parity(m);
}

void SlabSender::transmit(DatagramBatch& batch, const Stop& stop, const Refused& on_refused) {
    pacer_.wait_to_send(batch.bytes());
    const bool first = stamp_due_;
    if (first) {
        stamp_due_ = false;
        stamp_.step = step_;
        stamp_.slab = o_.slab;
        stamp_.sent_ns = realtime_ns();
        send_stamp(on_refused);
    }
    batch.send(socket_.fd(), stop, on_refused);
    if (first) send_stamp(on_refused);
    bytes_in_step_ += batch.bytes();
}

void SlabSender::send_stamp(const Refused& on_refused) {
    std::uint8_t bytes[stamp::kBytes];
    stamp::write(bytes, stamp_);
    // Best effort, never waited for: a stamp the kernel cannot take now costs
    // the step its time, not its data. A refusal it reports (ICMP port
    // unreachable, from an earlier datagram) is the caller's, as for a batch.
    if (::send(socket_.fd(), bytes, sizeof bytes, MSG_DONTWAIT) == static_cast<ssize_t>(sizeof bytes)) ++stamps_sent_;
    else if (errno == ECONNREFUSED && on_refused) on_refused();
}

}  // namespace slabcast
