#include "slabcast/fec_sender.h"

#include "slabcast/units.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace slabcast::fec {

Choice parse_choice(const std::string& text) {
    if (text == "none") return {0, 0, Choice::kDefaultDepth, 0};
    if (text == "auto") return parse_choice(kAuto);
    const auto bad = [&](const std::string& why) {
        return std::invalid_argument("FEC '" + text + "': " + why +
                                     " (expected none, auto, K+M or K+M/DEPTH, e.g. 200+22/4: 200 data and 22 "
                                     "parity datagrams a group, 4 groups interleaved; or K+LOW-HIGH[/DEPTH], M "
                                     "following the loss the receiver reports)");
    };
    Choice c;
    const auto plus = text.find('+'), slash = text.find('/');
    if (plus == std::string::npos) throw bad("no '+'");
    const auto whole = [&](const std::string& part, const char* what) {
        const auto n = parse_whole(part, 0, 100000);
        if (!n) throw bad(std::string(what) + " '" + part + "' is not a whole number");
        return static_cast<int>(*n);
    };
    c.k = whole(text.substr(0, plus), "K");
    const std::string m = text.substr(plus + 1, slash == std::string::npos ? std::string::npos : slash - plus - 1);
    const auto dash = m.find('-');
    c.m = whole(m.substr(dash == std::string::npos ? 0 : dash + 1), "M");
    c.m_low = dash == std::string::npos ? c.m : whole(m.substr(0, dash), "LOW");
    if (slash != std::string::npos) c.depth = whole(text.substr(slash + 1), "DEPTH");
    if (!valid_code(c.k, c.m))
        throw bad("K must be 1.." + std::to_string(kMaxDataShards) + ", M 1.." + std::to_string(kMaxParityShards) +
                  ", K+M at most 255");
    if (c.m_low < 1 || c.m_low > c.m) throw bad("LOW must be 1..HIGH");
    if (c.depth < 1 || c.depth > 64) throw bad("DEPTH must be 1..64");
    return c;
}

std::string to_string(const Choice& c) {
    if (!c.on()) return "none";
    return std::to_string(c.k) + "+" + (c.adaptive() ? std::to_string(c.m_low) + "-" : std::string()) +
           std::to_string(c.m) + "/" + std::to_string(c.depth);
}

GroupSender::GroupSender(int k, int m, int depth) : code_(k, m), m_(m), depth_(depth) {
    if (depth < 1 || depth > 64) throw std::invalid_argument("FEC interleave depth " + std::to_string(depth) + ": 1..64");
    for (auto* set : {&open_, &closed_}) {
        set->resize(static_cast<std::size_t>(depth));
        for (Group& g : *set) {
            g.parity.assign(static_cast<std::size_t>(m), std::vector<std::uint8_t>(kMaxDatagramBytes, 0));
            for (auto& d : g.parity) g.shards.push_back(d.data() + kParityHeaderBytes);
        }
    }
    for (int s = 0; s < depth; ++s) open_[static_cast<std::size_t>(s)].id = next_group_++;
    ring_.resize(2 * static_cast<std::size_t>(depth) * static_cast<std::size_t>(m));
    queued_of_slot_.assign(static_cast<std::size_t>(depth), 0);
    out_.reserve(ring_.size());
}

void GroupSender::emit_one() {
    const Queued& q = ring_[head_];
    out_.push_back(q.datagram);
    --queued_of_slot_[static_cast<std::size_t>(q.slot)];
    head_ = (head_ + 1) % ring_.size();
    --queued_;
    ++parity_sent_;
}

void GroupSender::close(int slot) {
    const auto s = static_cast<std::size_t>(slot);
    // The slot's previous group's parity leaves before its buffers are reused.
    while (queued_of_slot_[s] > 0) emit_one();
    std::swap(open_[s], closed_[s]);
    Group& g = closed_[s];
    Group& next = open_[s];
    const int m = m_;
    for (int j = 0; j < m; ++j) {
        Header h;
        h.parity = true;
        h.index = static_cast<std::uint8_t>(j);
        h.k = static_cast<std::uint8_t>(code_.data_shards());
        h.m = static_cast<std::uint8_t>(m);
        h.count = static_cast<std::uint8_t>(g.count);
        h.group = g.id;
        write_header(g.parity[static_cast<std::size_t>(j)].data(), h);
    }
    // Queued, to leave spread among the next datagrams (add() sends m for
    // every k): a burst that takes one of them takes few of one group's.
    for (int j = 0; j < m; ++j) {
        const std::size_t at = (head_ + queued_) % ring_.size();
        ring_[at] = {{g.parity[static_cast<std::size_t>(j)].data(), kParityHeaderBytes + g.longest}, slot};
        ++queued_;
        ++queued_of_slot_[s];
    }
    ++groups_closed_;
    next.id = next_group_++;
    next.count = 0;
    next.longest = 0;
}

const std::vector<ParityDatagram>& GroupSender::add(std::uint8_t* shim, const std::uint8_t* datagram, std::size_t length) {
    if (length == 0 || length > kMaxShardBytes)
        throw std::length_error("FEC: a datagram of " + std::to_string(length) + " bytes (1.." +
                                std::to_string(kMaxShardBytes) + " with FEC)");
    out_.clear();
    const int slot = static_cast<int>(sent_ % static_cast<std::uint64_t>(depth_));
    Group& g = open_[static_cast<std::size_t>(slot)];
    if (g.count == 0)
        for (int j = 0; j < m_; ++j) std::memset(g.shards[static_cast<std::size_t>(j)], 0, kMaxShardBytes);
    Header h;
    h.index = static_cast<std::uint8_t>(g.count);
    h.group = g.id;
    write_header(shim, h);
    code_.add(g.count, datagram, length, g.shards.data(), m_);
    g.longest = std::max(g.longest, length);
    ++g.count;
    ++sent_;
    if (g.count == code_.data_shards()) close(slot);
    // m parity datagrams for every k data datagrams, the oldest first.
    credit_ += static_cast<std::uint64_t>(m_);
    const auto k = static_cast<std::uint64_t>(code_.data_shards());
    while (queued_ > 0 && credit_ >= k) {
        credit_ -= k;
        emit_one();
    }
    // No credit banked while nothing waits: a block's parity would leave in one burst.
    if (queued_ == 0) credit_ = std::min(credit_, k);
    return out_;
}

const std::vector<ParityDatagram>& GroupSender::flush() {
    out_.clear();
    for (int s = 0; s < depth_; ++s) {
        // The open groups in the order their next datagrams would have come.
        const int slot = static_cast<int>((sent_ + static_cast<std::uint64_t>(s)) % static_cast<std::uint64_t>(depth_));
        if (open_[static_cast<std::size_t>(slot)].count > 0) close(slot);
    }
    while (queued_ > 0) emit_one();
    credit_ = 0;
    // The next step's datagrams start at slot 0's new group.
    sent_ = 0;
    if (pending_m_ > 0) m_ = std::exchange(pending_m_, 0);
    return out_;
}

void GroupSender::set_parity(int m) {
    if (m < 1 || m > code_.parity_shards())
        throw std::invalid_argument("FEC: " + std::to_string(m) + " parity datagrams a group (1.." +
                                    std::to_string(code_.parity_shards()) + ")");
    for (const Group& g : open_)
        if (g.count > 0) {
            pending_m_ = m;
            return;
        }
    m_ = m;
    pending_m_ = 0;
}

}  // namespace slabcast::fec
