#include "slabcast/erasure_code.h"

#include <isa-l/erasure_code.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace slabcast::fec {

ErasureCode::ErasureCode(int k, int m) : k_(k), m_(m) {
    if (!valid_code(k, m))
        throw std::invalid_argument("erasure code " + std::to_string(k) + "+" + std::to_string(m) +
                                    ": needs 1..240 data and 1..64 parity shards, 255 in all at most");
    const auto rows = static_cast<std::size_t>(k + m), cols = static_cast<std::size_t>(k);
    matrix_.resize(rows * cols);
    gf_gen_cauchy1_matrix(matrix_.data(), k + m, k);
    tables_.resize(32 * cols * static_cast<std::size_t>(m));
    ec_init_tables(k, m, matrix_.data() + cols * cols, tables_.data());
    square_.resize(static_cast<std::size_t>(m) * static_cast<std::size_t>(m));
    inverse_.resize(square_.size());
    lost_.resize(static_cast<std::size_t>(m) + 1);
    parity_.resize(static_cast<std::size_t>(m));
    rows_.resize(cols * static_cast<std::size_t>(m));
    rebuild_tables_.resize(tables_.size());
    sources_.resize(cols);
    targets_.resize(static_cast<std::size_t>(m));
    weights_.resize(cols * static_cast<std::size_t>(m));
    weight_tables_.resize(32 * static_cast<std::size_t>(m) * static_cast<std::size_t>(m));
    chosen_.resize(static_cast<std::size_t>(m));
    weights_out_.resize(static_cast<std::size_t>(m));
}

void ErasureCode::encode(const std::uint8_t* const* data, std::size_t length, std::uint8_t* const* parity) const {
    // ISA-L's signatures are not const-aware; it reads data and tables only.
    ec_encode_data(static_cast<int>(length), k_, m_, const_cast<std::uint8_t*>(tables_.data()),
                   const_cast<std::uint8_t**>(data), const_cast<std::uint8_t**>(parity));
}

void ErasureCode::add(int index, const std::uint8_t* shard, std::size_t length, std::uint8_t* const* parity,
                      int rows) const {
    if (index < 0 || index >= k_) throw std::out_of_range("erasure code: data shard index out of range");
    if (rows == -1) rows = m_;
    if (rows < 1 || rows > m_) throw std::out_of_range("erasure code: parity rows out of range");
    // The expanded tables are row after row: the first `rows` rows' come first.
    ec_encode_data_update(static_cast<int>(length), k_, rows, index, const_cast<std::uint8_t*>(tables_.data()),
                          const_cast<std::uint8_t*>(shard), const_cast<std::uint8_t**>(parity));
}

bool ErasureCode::rebuild(const std::uint8_t* const* shards, std::size_t length, std::uint8_t* const* shards_out) {
    const auto cols = static_cast<std::size_t>(k_);
    // The lost data shards, and as many parity shards as there are of them.
    int lost = 0, parity = 0;
    for (int i = 0; i < k_; ++i) {
        if (shards[i]) continue;
        lost_[static_cast<std::size_t>(lost++)] = i;
        if (lost > m_) return false;
    }
    if (lost == 0) return true;
    for (int j = 0; j < m_ && parity < lost; ++j)
        if (shards[k_ + j]) parity_[static_cast<std::size_t>(parity++)] = j;
    if (parity < lost) return false;
    const auto e = static_cast<std::size_t>(lost);
    // Parity row j is sum_i C[j][i] D_i over every data shard i. With the
    // data present moved to the other side, the lost ones solve an e x e
    // system: S D_lost = P_sel - C_present D_present, where S (the chosen
    // parity rows' columns of the lost shards) is a square Cauchy submatrix
    // and inverts. So each lost shard is one dot product over k sources:
    // the e chosen parity shards (weights S^-1) and the k - e data shards
    // present (weights -S^-1 C_present; minus is plus in GF(2^8)). That is
    // e/m of an encode, where inverting the whole k x k matrix of the
    // shards present costs O(k^3) a group (0.06 GB/s at 200+22 here).
    const std::uint8_t* cauchy = matrix_.data() + cols * cols;  // row j: parity j's weights
    for (std::size_t r = 0; r < e; ++r)
        for (std::size_t c = 0; c < e; ++c)
            square_[r * e + c] = cauchy[static_cast<std::size_t>(parity_[r]) * cols + static_cast<std::size_t>(lost_[c])];
    if (gf_invert_matrix(square_.data(), inverse_.data(), lost) != 0)
        throw std::logic_error("erasure code: a Cauchy submatrix did not invert");
    // Sources: the chosen parity shards, then the data shards present.
    std::size_t s = 0;
    for (std::size_t r = 0; r < e; ++r) sources_[s++] = shards[k_ + parity_[r]];
    for (int i = 0; i < k_; ++i)
        if (shards[i]) sources_[s++] = shards[i];
    // The data shards' weights, S^-1 C_sel over all k columns, are a matrix
    // product in GF(2^8): ISA-L's own dot products do it, with the chosen
    // parity rows of C as sources k bytes long (a scalar gf_mul for each of
    // the e x e x k terms cost more than the rebuild of a small group).
    for (std::size_t r = 0; r < e; ++r) chosen_[r] = const_cast<std::uint8_t*>(cauchy + static_cast<std::size_t>(parity_[r]) * cols);
    for (std::size_t out = 0; out < e; ++out) weights_out_[out] = weights_.data() + out * cols;
    ec_init_tables(lost, lost, inverse_.data(), weight_tables_.data());
    ec_encode_data(k_, lost, lost, weight_tables_.data(), chosen_.data(), weights_out_.data());
    for (std::size_t out = 0; out < e; ++out) {
        std::uint8_t* row = rows_.data() + out * cols;
        for (std::size_t r = 0; r < e; ++r) row[r] = inverse_[out * e + r];
        std::size_t c = e;
        for (int i = 0; i < k_; ++i)
            if (shards[i]) row[c++] = weights_[out * cols + static_cast<std::size_t>(i)];
        targets_[out] = shards_out[lost_[out]];
    }
    ec_init_tables(k_, lost, rows_.data(), rebuild_tables_.data());
    // One source at a time into every lost shard: each source is read once,
    // front to back, while the e outputs stay in cache. A dot product over
    // all k sources at once reads k streams side by side, which the cache's
    // prefetchers cannot follow: that cost 1.7-1.9x as much on a receiver,
    // whose shards have left the cache by the time a group is rebuilt
    // (bench_fec_receiver), and 1.8x on warm shards (bench_fec_codes).
    for (std::size_t out = 0; out < e; ++out) std::memset(targets_[out], 0, length);
    for (int c = 0; c < k_; ++c)
        ec_encode_data_update(static_cast<int>(length), k_, lost, c, rebuild_tables_.data(),
                              const_cast<std::uint8_t*>(sources_[static_cast<std::size_t>(c)]), targets_.data());
    return true;
}

}  // namespace slabcast::fec
