// The block cache between a mover's front end (disk) and back end (network):
// a fixed set of page-aligned slots allocated once, passed between the pools
// through two queues, `free` (last in, first out) and `full` (in order). Either pool can grow or shrink while
// the other runs; only the slots move, never their bytes.
#pragma once

#include "slabcast/mapped_region.h"
#include "slabcast/unique_fd.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace slabcast::mover {

// A payload the sending end does not copy into its slot: `length` bytes of
// the open file `fd` at `offset`, which go on the wire right after slot byte
// `at` (the end of its frame's header), from the page cache (sendfile). Only
// on plaintext streams: a sealed stream needs the bytes in memory.
struct PayloadRef {
    std::size_t at = 0;
    std::shared_ptr<UniqueFd> fd;
    std::uint64_t offset = 0;
    std::size_t length = 0;
};

struct Slot {
    std::uint8_t* data = nullptr;
    std::size_t capacity = 0;
    std::size_t begin = 0;  // where its first frame starts (full blocks: payload page-aligned)
    std::size_t used = 0;   // end of its last frame
    std::vector<PayloadRef> refs;  // sending end only, in slot order
    std::size_t referenced = 0;    // their bytes: the slot's frames take used - begin + referenced on the wire
};

class BlockRing {
public:
    BlockRing(std::size_t slots, std::size_t slot_bytes);
    BlockRing(const BlockRing&) = delete;
    BlockRing& operator=(const BlockRing&) = delete;

    enum class Take { Got, Timeout, Closed };
    // Waits up to `timeout_ms` for a free slot (emptied). Closed: aborted.
    Take take_free(Slot*& out, int timeout_ms);
    // Waits up to `timeout_ms` for a filled slot. Closed: aborted, or
    // close_full() was called and none is left. (The timeout lets a pool
    // thread look at its stop flag: pools shrink while the ring runs.)
    Take take_full(Slot*& out, int timeout_ms);
    void put_free(Slot* s);
    void put_full(Slot* s);
    // No more filled slots will come: take_full drains, then returns nullopt.
    void close_full();
    // Everything stops: both takes return nullopt.
    void abort();

    std::size_t slot_bytes() const { return slot_bytes_; }
    std::size_t slots() const { return slots_.size(); }
    std::size_t full_count();

private:
    std::size_t slot_bytes_;
    MappedRegion arena_;
    std::deque<Slot> slots_;
    std::deque<Slot*> free_, full_;
    bool full_closed_ = false, aborted_ = false;
    std::mutex mutex_;
    // One per queue, woken one waiter per slot: a broadcast would wake every
    // stream and every writer for each block.
    std::condition_variable free_changed_, full_changed_;
};

}  // namespace slabcast::mover
