// A stream's receiving side of forward error correction (slabcast/fec_packet.h):
// a data datagram is handed on at once and kept for its group; once a group
// has any k of its k + m datagrams, the data datagrams it lost are rebuilt
// (slabcast/erasure_code.h) and handed on too, before a step that needs them
// is given up. A retransmission would cost a round trip per loss; the paper's
// path lost about 5% (Balman et al., 2012, section 4).
//
// Everything a datagram says is checked before it is kept: the header
// (parse_header), the group's code (every parity packet of a group must agree
// on k, m and length; a data index below the group's k), and a rebuilt
// datagram's own length (inner_length). What it hands on is checked again by
// the receiver as any datagram is: a forged parity packet changes nothing
// outside its own group's datagrams, which it could as well have forged.
// Memory is allocated once: `window` groups of up to `max_shards` datagrams.
#pragma once

#include "slabcast/erasure_code.h"
#include "slabcast/fec_packet.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace slabcast::fec {

struct ReceiverCounts {
    std::uint64_t data = 0, parity = 0;  // datagrams taken
    std::uint64_t repaired = 0;          // data datagrams rebuilt and handed on
    std::uint64_t unrepaired_groups = 0;  // groups given up with data missing
    std::uint64_t unrepaired = 0;         // data datagrams those groups are known to have lost
    std::uint64_t malformed = 0;          // bad headers, codes that disagree, rebuilt shards with no datagram
    std::uint64_t late = 0;               // for a group older than the window, or already whole
    std::uint64_t duplicates = 0;
    // The path's loss (slabcast/fec_report.h): the datagrams of the groups
    // given up so far, data and parity (count + m each, as their parity
    // said), and those of them that never came, late ones counted as come;
    // those groups, and the sum of the square of each one's lost.
    std::uint64_t group_datagrams = 0, group_lost = 0, groups = 0, group_lost_squares = 0;
};

class GroupReceiver {
public:
    // The datagram handed on: the inner (quad, run or stamp) datagram.
    using Deliver = std::function<void(const std::uint8_t* datagram, std::size_t length)>;

    // `window`: groups held at once (a stream's interleave depth and some
    // reordering: 2 x depth is plenty); `max_shards`: the largest k + m it
    // takes (a larger group is counted malformed). Throws
    // std::invalid_argument outside 1..1024 and 2..255.
    GroupReceiver(int window, int max_shards);

    // Takes one datagram that is_fec(); hands on what it carries or rebuilds.
    void accept(const std::uint8_t* datagram, std::size_t length, const Deliver& deliver);

    // Gives up every group still open (a stream's end): counts what they lost.
    void finish();

    const ReceiverCounts& counts() const { return counts_; }

private:
    struct Group {
        // done: whole or rebuilt; broken: its datagrams disagree, so no repair
        bool used = false, done = false, broken = false;
        std::uint32_t id = 0;
        int k = 0, m = 0, count = 0;  // 0 until a parity packet says
        std::size_t shard_bytes = 0;  // the parity's length; 0 until known
        int present = 0, data_present = 0, highest_data = -1;
        int arrived = 0;                     // shards that came, in time or not (the path's loss)
        std::vector<std::uint8_t> have;      // a flag a shard (k + m): held, or handed on
        std::vector<std::uint8_t> came;      // a flag a shard: it came
        std::vector<std::size_t> length;     // each data shard's own length
        std::uint8_t* shards = nullptr;      // max_shards x kMaxShardBytes
    };
    Group* group_for(std::uint32_t id);
    void give_up(Group& g);
    static void note_came(Group& g, std::size_t shard);
    void try_rebuild(Group& g, const Deliver& deliver);

    int window_, max_shards_;
    std::unique_ptr<std::uint8_t[]> memory_;
    std::vector<Group> groups_;
    std::uint32_t newest_ = 0;
    bool any_ = false;
    // One code per (k, m) met, made once (few: a stream's k+m and its last group's).
    std::vector<std::unique_ptr<ErasureCode>> codes_;
    std::vector<const std::uint8_t*> present_;
    std::vector<std::uint8_t*> out_;
    ReceiverCounts counts_;
};

}  // namespace slabcast::fec
