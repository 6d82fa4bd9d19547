// A stream's sending side of forward error correction (slabcast/fec_packet.h):
// each data datagram gets its shim and is added to its group's parity as it
// leaves, and the parity goes out spread among the next datagrams.
//
// Groups are interleaved: datagram i of the stream joins the open group
// number i mod depth, so that a burst of losses on the path (the paper's WAN
// lost about 5% of its packets: Balman et al., 2012, section 4) falls on
// several groups, a few datagrams each, rather than on one. A group's parity
// is spread out too: it leaves among the datagrams after the group, m for
// every k data datagrams. flush() at a step's end closes the open groups and
// returns all the parity left, so that no group waits for the next step.
#pragma once

#include "slabcast/erasure_code.h"
#include "slabcast/fec_packet.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace slabcast::fec {

// A stream's code as its options name it (`--fec`): k data and m parity
// datagrams a group, groups interleaved `depth` deep; k == 0: no FEC. With
// a range of m (m_low < m), m follows the loss the receiver reports
// (slabcast/fec_report.h), between m_low and m, starting at m.
struct Choice {
    static constexpr int kDefaultDepth = 4;
    int k = 0, m = 0, depth = kDefaultDepth;
    int m_low = 0;  // == m: a fixed code
    bool on() const { return k > 0; }
    bool adaptive() const { return on() && m_low < m; }
};
// "none"; "K+M" or "K+M/DEPTH" (valid_code(K, M), DEPTH 1..64); "K+LOW-HIGH"
// or "K+LOW-HIGH/DEPTH" (M follows the reported loss, LOW <= M <= HIGH);
// "auto" (kAuto). Throws std::invalid_argument naming what is wrong.
Choice parse_choice(const std::string& text);
std::string to_string(const Choice& c);  // "none", "K+M/DEPTH", "K+LOW-HIGH/DEPTH"
// `--fec auto`: groups of 200, 2 to 40 parity datagrams as the loss asks
// (40: up to about 8% random loss), 4 deep.
constexpr const char* kAuto = "200+2-40/4";

struct ParityDatagram {
    const std::uint8_t* bytes = nullptr;
    std::size_t length = 0;
};

class GroupSender {
public:
    // Throws std::invalid_argument unless valid_code(k, m) and 1 <= depth <= 64.
    GroupSender(int k, int m, int depth);

    int k() const { return code_.data_shards(); }
    int m() const { return m_; }  // parity datagrams a group now
    int most_parity() const { return code_.parity_shards(); }
    int depth() const { return depth_; }

    // From the next group on, m parity datagrams a group (1..most_parity()):
    // at once when no group is open (after flush()), else at the next flush.
    void set_parity(int m);

    // Writes the shim of the stream's next data datagram (kDataHeaderBytes
    // at `shim`) and adds the datagram (`length` bytes after the shim, at most
    // kMaxShardBytes) to its group. Returns the parity datagrams to send after
    // it; they stay valid until the next add() or flush().
    const std::vector<ParityDatagram>& add(std::uint8_t* shim, const std::uint8_t* datagram, std::size_t length);

    // Closes every open group (each with the data it has: its parity says
    // how many, the rest of its k are zeros) and returns all the parity not
    // yet sent.
    const std::vector<ParityDatagram>& flush();

    std::uint64_t groups_closed() const { return groups_closed_; }
    std::uint64_t parity_sent() const { return parity_sent_; }

private:
    struct Group {
        std::uint32_t id = 0;
        int count = 0;            // data datagrams in it so far
        std::size_t longest = 0;  // the longest of them: the parity shards' length
        std::vector<std::vector<std::uint8_t>> parity;  // m datagrams: header, then the shard
        std::vector<std::uint8_t*> shards;              // where each parity shard starts
    };
    struct Queued {
        ParityDatagram datagram;
        int slot = 0;
    };
    // Slot `slot`'s open group closed: its parity finished and queued, the
    // slot's previous group's parity sent first if any is still queued.
    void close(int slot);
    void emit_one();

    ErasureCode code_;
    int m_, pending_m_ = 0;  // pending: set_parity's, waiting for the open groups to close
    int depth_;
    // Two groups a slot: the one filling, and the one before it, whose
    // parity may still be queued.
    std::vector<Group> open_, closed_;
    // The parity to send, oldest first: a ring of 2 x depth x m, allocated once.
    std::vector<Queued> ring_;
    std::size_t head_ = 0, queued_ = 0;
    std::vector<int> queued_of_slot_;
    std::vector<ParityDatagram> out_;
    std::uint64_t sent_ = 0;       // data datagrams added
    std::uint64_t credit_ = 0;     // m per data datagram; a parity datagram costs k
    std::uint32_t next_group_ = 0;
    std::uint64_t groups_closed_ = 0, parity_sent_ = 0;
};

}  // namespace slabcast::fec
