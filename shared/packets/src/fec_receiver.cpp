#include "slabcast/fec_receiver.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace slabcast::fec {

namespace {
// The codes a receiver keeps made: a stream has one; a forger may show others.
constexpr std::size_t kCodesKept = 4;
// The zeros standing for the shards past a short group's count.
const std::uint8_t kZeros[kMaxShardBytes] = {};
}  // namespace

GroupReceiver::GroupReceiver(int window, int max_shards) : window_(window), max_shards_(max_shards) {
    if (window < 1 || window > 1024 || max_shards < 2 || max_shards > kMaxShards)
        throw std::invalid_argument("FEC receiver: a window of " + std::to_string(window) + " groups (1..1024) of " +
                                    std::to_string(max_shards) + " datagrams (2..255)");
    const auto per_group = static_cast<std::size_t>(max_shards) * kMaxShardBytes;
    // Made and touched once, here: never on a receiving path.
    memory_.reset(new std::uint8_t[static_cast<std::size_t>(window) * per_group]());
    groups_.resize(static_cast<std::size_t>(window));
    for (std::size_t i = 0; i < groups_.size(); ++i) {
        groups_[i].have.assign(static_cast<std::size_t>(max_shards), 0);
        groups_[i].came.assign(static_cast<std::size_t>(max_shards), 0);
        groups_[i].length.assign(static_cast<std::size_t>(max_shards), 0);
        groups_[i].shards = memory_.get() + i * per_group;
    }
    present_.resize(static_cast<std::size_t>(max_shards));
    out_.resize(static_cast<std::size_t>(max_shards));
}

GroupReceiver::Group* GroupReceiver::group_for(std::uint32_t id) {
    if (!any_) {
        newest_ = id;
        any_ = true;
    }
    // Serial arithmetic: group numbers wrap after 2^32.
    const auto ahead = static_cast<std::int32_t>(id - newest_);
    if (ahead <= -window_) return nullptr;
    if (ahead > 0) newest_ = id;
    Group& g = groups_[id % static_cast<std::uint32_t>(window_)];
    if (g.used && g.id == id) return &g;
    if (g.used && static_cast<std::int32_t>(g.id - id) > 0) return nullptr;  // the slot holds a newer group
    give_up(g);
    g.used = true;
    g.id = id;
    return &g;
}

void GroupReceiver::note_came(Group& g, std::size_t shard) {
    if (shard < g.came.size() && !g.came[shard]) {
        g.came[shard] = 1;
        ++g.arrived;
    }
}

void GroupReceiver::give_up(Group& g) {
    if (g.used && g.k > 0 && !g.broken) {
        const int sent = g.count + g.m;
        const auto lost = static_cast<std::uint64_t>(std::max(0, sent - g.arrived));
        counts_.group_datagrams += static_cast<std::uint64_t>(sent);
        counts_.group_lost += lost;
        ++counts_.groups;
        counts_.group_lost_squares += lost * lost;
    }
    if (g.used && !g.done) {
        const int expected = g.k > 0 && !g.broken ? g.count : g.highest_data + 1;
        const int missing = expected - g.data_present;
        if (missing > 0) {
            ++counts_.unrepaired_groups;
            counts_.unrepaired += static_cast<std::uint64_t>(missing);
        }
    }
    std::fill(g.have.begin(), g.have.end(), 0);
    std::fill(g.came.begin(), g.came.end(), 0);
    g.used = g.done = g.broken = false;
    g.k = g.m = g.count = 0;
    g.shard_bytes = 0;
    g.present = g.data_present = g.arrived = 0;
    g.highest_data = -1;
}

void GroupReceiver::finish() {
    for (Group& g : groups_) give_up(g);
}

void GroupReceiver::accept(const std::uint8_t* datagram, std::size_t length, const Deliver& deliver) {
    Header h;
    if (parse_header(datagram, length, h) != ParseResult::Ok) {
        ++counts_.malformed;
        return;
    }
    const std::size_t header = header_bytes(h.parity);
    const std::uint8_t* body = datagram + header;
    const std::size_t bytes = length - header;
    Group* g = group_for(h.group);
    if (!h.parity) {
        ++counts_.data;
        if (g && h.index >= max_shards_) g = nullptr;  // handed on, never part of a group this receiver holds
        if (g) note_came(*g, h.index);
        if (g && g->have[h.index]) {  // handed on already, as it came or rebuilt
            ++counts_.duplicates;
            return;
        }
        deliver(body, bytes);
        if (!g || g->done || g->broken) return;
        if (g->k > 0 && (h.index >= g->count || bytes > g->shard_bytes)) {
            ++counts_.malformed;  // not the group its parity describes: no repair for it
            g->broken = true;
            return;
        }
        std::memcpy(g->shards + std::size_t{h.index} * kMaxShardBytes, body, bytes);
        g->length[h.index] = bytes;
        g->have[h.index] = 1;
        ++g->present;
        ++g->data_present;
        g->highest_data = std::max(g->highest_data, int{h.index});
    } else {
        ++counts_.parity;
        if (g && g->k > 0 && h.k == g->k && h.m == g->m) note_came(*g, static_cast<std::size_t>(g->k) + h.index);
        if (!g || g->done) {
            ++counts_.late;
            return;
        }
        if (g->broken) return;
        if (h.k + h.m > max_shards_) {
            ++counts_.malformed;
            return;
        }
        if (g->k == 0) {
            // The first parity packet describes the group; what it already holds must fit.
            for (int i = 0; i <= g->highest_data; ++i)
                if (g->have[static_cast<std::size_t>(i)] && (i >= h.count || g->length[static_cast<std::size_t>(i)] > bytes)) {
                    ++counts_.malformed;
                    g->broken = true;
                    return;
                }
            g->k = h.k;
            g->m = h.m;
            g->count = h.count;
            g->shard_bytes = bytes;
            note_came(*g, static_cast<std::size_t>(g->k) + h.index);
        } else if (h.k != g->k || h.m != g->m || h.count != g->count || bytes != g->shard_bytes) {
            ++counts_.malformed;  // parity packets of one group disagree
            return;
        }
        const std::size_t at = static_cast<std::size_t>(g->k) + h.index;
        if (g->have[at]) {
            ++counts_.duplicates;
            return;
        }
        std::memcpy(g->shards + at * kMaxShardBytes, body, bytes);
        g->have[at] = 1;
        ++g->present;
    }
    try_rebuild(*g, deliver);
}

void GroupReceiver::try_rebuild(Group& g, const Deliver& deliver) {
    if (g.k == 0 || g.done || g.broken) return;
    if (g.data_present == g.count) {
        g.done = true;  // whole as it came
        return;
    }
    if (g.present < g.count) return;  // fewer than count of the count + m sent
    ErasureCode* code = nullptr;
    for (auto& c : codes_)
        if (c->data_shards() == g.k && c->parity_shards() == g.m) code = c.get();
    if (!code) {
        if (codes_.size() == kCodesKept) codes_.erase(codes_.begin());
        codes_.push_back(std::make_unique<ErasureCode>(g.k, g.m));
        code = codes_.back().get();
    }
    for (int i = 0; i < g.k + g.m; ++i) {
        const auto s = static_cast<std::size_t>(i);
        std::uint8_t* shard = g.shards + s * kMaxShardBytes;
        out_[s] = shard;
        if (i >= g.count && i < g.k) {
            present_[s] = kZeros;
        } else if (g.have[s]) {
            if (i < g.count) std::memset(shard + g.length[s], 0, g.shard_bytes - g.length[s]);  // padded as sent
            present_[s] = shard;
        } else {
            present_[s] = nullptr;
        }
    }
    g.done = true;
    if (!code->rebuild(present_.data(), g.shard_bytes, out_.data())) return;
    for (int i = 0; i < g.count; ++i) {
        const auto s = static_cast<std::size_t>(i);
        if (g.have[s]) continue;
        g.have[s] = 1;  // handed on: a late copy is a duplicate
        const std::size_t inner = inner_length(out_[s], g.shard_bytes);
        if (inner == 0) {
            ++counts_.malformed;
            continue;
        }
        ++counts_.repaired;
        deliver(out_[s], inner);
    }
}

}  // namespace slabcast::fec
