// The receiver's report of what a stream's groups lost, for a sender whose
// parity follows the loss (`--fec K+LOW-HIGH`, `--fec auto`): the paper's
// path lost about 5% of its packets (Balman et al., 2012, section 4), but a
// path's loss changes, and parity for the worst case costs bytes all day.
// Byte by byte in docs/wire-format.md, "FEC loss report".
//
// The receiver sends it after each step it publishes, from the stream's
// socket to the address the stream's FEC datagrams came from: the sender's
// socket is connected to the receiver's, so it takes it there, and nothing
// else. Its totals run from the receiver's start, so a lost report loses
// nothing and a receiver that started again is seen (the totals fall):
//
//   int32 magic (bytes "SCL" 0x80); uint8 version (1); uint8 reserved[3] (0);
//   int32 slab; uint32 reserved (0);
//   uint64 datagrams: data and parity datagrams of the groups closed so far
//          (each group's count + m, as its parity said);
//   uint64 lost: of those, the ones that never came;
//   uint64 groups: those groups; uint64 lost_squares: the sum over them of
//          the square of each one's lost: how bunched the losses are.
//
// Losses that come in bursts bunch in a group more than independent ones
// (interleaving spreads a burst, but a long one still lands several in a
// group): the parity a loss rate needs is then more than the binomial says.
//
// A forged report moves the sender's parity within its LOW..HIGH, no further.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slabcast::fec {

constexpr std::size_t kReportBytes = 48;

struct Report {
    std::int32_t slab = 0;
    std::uint64_t datagrams = 0, lost = 0;
    std::uint64_t groups = 0, lost_squares = 0;
};

void write_report(std::uint8_t* out, const Report& r);
// False unless exactly kReportBytes with the magic, version 1, reserved
// bytes 0, a slab >= 0, lost <= datagrams, groups <= datagrams and
// lost <= lost_squares <= 255 x lost (a group has at most 255 datagrams).
bool parse_report(const std::uint8_t* bytes, std::size_t length, Report& out);

// The sender's view of the loss: the reports' totals, differenced, over
// about the last kMemory datagrams (a path's loss moves; an old figure
// should not hold the parity up or down for long).
class LossTracker {
public:
    static constexpr std::uint64_t kMemory = 50'000;
    void take(const Report& r);
    double datagrams() const { return datagrams_; }
    double lost() const { return lost_; }
    // The variance of a group's loss over its mean (1 for losses that come
    // one by one, at random; more for bursts); 1 until groups are seen.
    double dispersion() const;

private:
    bool any_ = false;
    Report last_;
    double datagrams_ = 0, lost_ = 0, groups_ = 0, squares_ = 0;
};

// The parity a group of k data datagrams needs at the loss measured, `lost`
// of `datagrams`, bunched by `dispersion`: the least m in [low, high] for
// which a group of k + m, each lost with the loss's upper bound (3 standard
// errors above it), loses more than m with odds of at most kGroupFailure.
// Bunched losses are counted as clumps of `dispersion` datagrams (a binomial
// of (k + m) / dispersion trials, each a clump, against m / dispersion):
// its mean and variance are the measured ones. `high` when fewer than
// kLeastDatagrams were measured.
constexpr double kGroupFailure = 1e-5;
constexpr double kLeastDatagrams = 2'000;
int parity_for_loss(int k, double datagrams, double lost, double dispersion, int low, int high);

}  // namespace slabcast::fec
