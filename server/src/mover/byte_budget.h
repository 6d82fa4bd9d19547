// Bytes that many threads draw on together, with a fixed total: serve's
// manifests still arriving (ReceiveLimits::manifests). A transfer that has
// said Hello is not counted against --max-transfers until its manifest is
// whole, so what the manifests being received hold is bounded here instead,
// to what --max-transfers of them could hold.
#pragma once

#include <atomic>
#include <cstdint>

namespace slabcast::mover {

class ByteBudget {
public:
    explicit ByteBudget(std::uint64_t total) : total_(total) {}
    std::uint64_t total() const { return total_; }
    // false, taking nothing, when `n` more would pass the total.
    bool take(std::uint64_t n) {
        std::uint64_t used = used_.load();
        do {
            if (n > total_ - used) return false;
        } while (!used_.compare_exchange_weak(used, used + n));
        return true;
    }
    void give(std::uint64_t n) { used_ -= n; }

private:
    const std::uint64_t total_;
    std::atomic<std::uint64_t> used_{0};
};

}  // namespace slabcast::mover
