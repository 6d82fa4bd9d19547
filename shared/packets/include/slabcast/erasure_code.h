// Reed-Solomon erasure coding over GF(2^8) for groups of datagrams: k data
// shards and m parity shards of equal length, any k of the k + m rebuilding
// the rest. The paper streamed over UDP and accepted its losses, about 5% of
// the packets in the high-bandwidth demo (Balman et al., 2012, section 4); a
// parity shard repairs a lost datagram without a round trip.
//
// The code is ISA-L's (libisal): a Cauchy matrix, so that every k-by-k
// submatrix of the k + m rows inverts, and its SIMD kernels (chosen by the
// library for the CPU it runs on). testing/bench/bench_fec_codes.cpp measures it
// against cm256cc and jerasure on the same shards (docs/performance.md, "Forward
// error correction").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slabcast::fec {

// k + m <= 255 rows of a Cauchy matrix over GF(2^8) (ISA-L's bound).
constexpr int kMaxShards = 255;
constexpr int kMaxDataShards = 240;
constexpr int kMaxParityShards = 64;

// True when (k, m) is a code this library builds: 1 <= k <= 240,
// 1 <= m <= 64, k + m <= 255.
constexpr bool valid_code(int k, int m) {
    return k >= 1 && k <= kMaxDataShards && m >= 1 && m <= kMaxParityShards && k + m <= kMaxShards;
}

class ErasureCode {
public:
    // Throws std::invalid_argument unless valid_code(k, m).
    ErasureCode(int k, int m);

    int data_shards() const { return k_; }
    int parity_shards() const { return m_; }

    // parity[0..m) = the code of data[0..k), each `length` bytes.
    void encode(const std::uint8_t* const* data, std::size_t length, std::uint8_t* const* parity) const;

    // Adds data shard `index` (0..k) into parity[0..rows), each `length`
    // bytes (rows: 1..m, -1 for m): after every data shard of a group was
    // added once to parity zeroed at its start, parity is encode()'s. A
    // shard shorter than the group's longest is its first `length` bytes,
    // the rest zero (and adds nothing past `length`). A Cauchy row depends
    // on its own index only, so the first rows of a (k, m) code are the
    // (k, rows) code's parity: a sender may send fewer than m.
    void add(int index, const std::uint8_t* shard, std::size_t length, std::uint8_t* const* parity, int rows = -1) const;

    // Rebuilds the data shards missing from a group. `shards[i]` for
    // i in 0..k+m is shard i (data, then parity), or nullptr where it was
    // lost; every present shard is `length` bytes. Each missing data shard
    // i is written to shards_out[i] (`length` bytes, the caller's memory).
    // Returns false, writing nothing, when fewer than k shards are present.
    // Costs about e/m of an encode for e lost data shards.
    // Allocates nothing: its scratch is sized for m losses when built.
    bool rebuild(const std::uint8_t* const* shards, std::size_t length, std::uint8_t* const* shards_out);

private:
    int k_, m_;
    std::vector<std::uint8_t> matrix_;  // (k + m) x k: identity, then the Cauchy rows
    std::vector<std::uint8_t> tables_;  // ISA-L's expanded tables for the m parity rows
    // rebuild()'s scratch, sized once
    std::vector<std::uint8_t> square_, inverse_, rows_, rebuild_tables_, weights_, weight_tables_;
    std::vector<int> lost_, parity_;
    std::vector<const std::uint8_t*> sources_;
    std::vector<std::uint8_t*> targets_, chosen_, weights_out_;
};

}  // namespace slabcast::fec
