// libFuzzer harness: forward error correction's receiving side
// (slabcast/fec_receiver.h), what a receiver does with every datagram that
// carries an FEC magic before its data reaches a slab, and the sender's side
// of the loss reports that come back (slabcast/fec_report.h). Two ways to
// read the input, by its first byte:
//   even: datagrams as they come off the wire (a 16-bit length, then the
//         bytes), any bytes at all: nothing may read or write past its
//         buffers (ASan), and nothing handed on may be longer than a shard;
//         each is also read as a loss report, and the parity a sender would
//         choose from the reports so far stays within its bounds;
//   odd:  a stream the real sender (fec_sender.h) makes from the input (its
//         code, depth and run packets), with datagrams dropped and bits
//         flipped as the input says: with no bit flipped and at most m of any
//         group's datagrams lost, every data datagram must come out once, as
//         sent; with flips, only the limits above hold.
#include "fuzz_input.h"

#include "slabcast/fec_receiver.h"
#include "slabcast/fec_report.h"
#include "slabcast/fec_sender.h"
#include "slabcast/run_packet.h"

#include <map>
#include <vector>

using namespace slabcast;
using Bytes = std::vector<std::uint8_t>;

namespace {

void check_handed_on(const std::uint8_t* d, std::size_t n, unsigned& sum) {
    if (n == 0 || n > fec::kMaxShardBytes) __builtin_trap();
    sum += d[0] + d[n - 1];  // touched: ASan sees a short buffer
}

void wire(FuzzInput& in) {
    static fec::GroupReceiver receiver(8, 64);
    fec::LossTracker loss;
    unsigned sum = 0;
    while (in.left() > 2) {
        const auto length = static_cast<std::size_t>(in.take_or_short<std::uint16_t>() % 9100);
        const std::string bytes = in.bytes(length);
        const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
        receiver.accept(data, bytes.size(), [&](const std::uint8_t* d, std::size_t n) { check_handed_on(d, n, sum); });
        fec::Report r;
        if (fec::parse_report(data, bytes.size(), r)) {
            loss.take(r);
            if (!(loss.lost() <= loss.datagrams() * (1 + 1e-9)) || !(loss.dispersion() >= 1)) __builtin_trap();
            const int m = fec::parity_for_loss(200, loss.datagrams(), loss.lost(), loss.dispersion(), 2, 40);
            if (m < 2 || m > 40) __builtin_trap();
        }
    }
}

void stream(FuzzInput& in) {
    const int k = 1 + in.take_or_short<std::uint8_t>() % 24, m = 1 + in.take_or_short<std::uint8_t>() % 6;
    const int depth = 1 + in.take_or_short<std::uint8_t>() % 4, count = 1 + in.take_or_short<std::uint8_t>() % 80;
    fec::GroupSender sender(k, m, depth);
    std::vector<Bytes> sent_data, datagrams;
    std::vector<std::uint32_t> group;
    auto queue = [&](const std::vector<fec::ParityDatagram>& ready) {
        for (const auto& p : ready) {
            datagrams.emplace_back(p.bytes, p.bytes + p.length);
            fec::Header h;
            if (fec::parse_header(p.bytes, p.length, h) != fec::ParseResult::Ok) __builtin_trap();
            group.push_back(h.group);
        }
    };
    for (int i = 0; i < count; ++i) {
        const int values = 1 + in.take_or_short<std::uint16_t>() % 2229;
        Bytes packet(run::packet_bytes(values));
        run::Header h;
        h.count = values;
        h.x = i;
        std::uint8_t* payload = run::write_header(packet.data(), h);
        const std::uint8_t seed = in.take_or_short<std::uint8_t>();
        for (int b = 0; b < 4 * values; ++b) payload[b] = static_cast<std::uint8_t>(seed + b * 7);
        Bytes out(fec::kDataHeaderBytes + packet.size());
        std::copy(packet.begin(), packet.end(), out.begin() + fec::kDataHeaderBytes);
        const auto& ready = sender.add(out.data(), packet.data(), packet.size());
        fec::Header s;
        if (fec::parse_header(out.data(), out.size(), s) != fec::ParseResult::Ok) __builtin_trap();
        datagrams.push_back(out);
        group.push_back(s.group);
        sent_data.push_back(packet);
        queue(ready);
    }
    queue(sender.flush());
    // Losses and flips: a byte of the input a datagram.
    std::map<std::uint32_t, int> lost_of_group;
    std::vector<bool> lost(datagrams.size());
    bool flipped = false;
    for (std::size_t i = 0; i < datagrams.size(); ++i) {
        const std::uint8_t what = in.take_or_short<std::uint8_t>();
        if (what % 4 == 1) {
            lost[i] = true;
            ++lost_of_group[group[i]];
        } else if (what == 0xFF && in.left() > 0) {
            Bytes& d = datagrams[i];
            d[in.take_or_short<std::uint16_t>() % d.size()] ^= static_cast<std::uint8_t>(1u << (in.take_or_short<std::uint8_t>() % 8));
            flipped = true;
        }
    }
    bool repairable = !flipped;
    for (const auto& [g, n] : lost_of_group) repairable = repairable && n <= m;
    // Groups in flight: a block's depth, and the block before it whose parity is still leaving.
    fec::GroupReceiver receiver(8, 32);
    std::map<Bytes, int> got;
    unsigned sum = 0;
    for (std::size_t i = 0; i < datagrams.size(); ++i) {
        if (lost[i]) continue;
        receiver.accept(datagrams[i].data(), datagrams[i].size(), [&](const std::uint8_t* d, std::size_t n) {
            check_handed_on(d, n, sum);
            if (repairable) ++got[Bytes(d, d + n)];
        });
    }
    receiver.finish();
    if (!repairable) return;
    for (const Bytes& d : sent_data)
        if (got[d] != 1) __builtin_trap();  // a datagram lost for good, or handed on twice
    if (receiver.counts().unrepaired != 0 || receiver.counts().malformed != 0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzInput in(data, size);
    if (in.left() == 0) return 0;
    if (in.take_or_short<std::uint8_t>() % 2 == 0)
        wire(in);
    else
        stream(in);
    return 0;
}
