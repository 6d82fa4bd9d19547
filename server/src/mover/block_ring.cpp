#include "mover/block_ring.h"

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

namespace slabcast::mover {

BlockRing::BlockRing(std::size_t slots, std::size_t slot_bytes) : slot_bytes_(slot_bytes) {
    if (slots < 2) throw std::invalid_argument("the block ring needs at least 2 slots");
    const std::size_t page = 4096;
    slot_bytes_ = (slot_bytes + page - 1) / page * page;
    const std::size_t arena_bytes = slots * slot_bytes_;
    // One anonymous mapping of page-aligned slots, left to be faulted in as
    // slots are first used: populating it here would hold up the start of
    // every transfer on both ends, while the network waits (docs/mover.md,
    // "Measured choices"). With free slots taken last in,
    // first out, a ring that is never full never touches most of its pages.
    arena_ = MappedRegion::map(arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    if (!arena_.valid())
        throw std::runtime_error("cannot allocate a block ring of " + std::to_string(arena_bytes >> 20) +
                                 " MiB: " + std::strerror(errno));
    for (std::size_t i = 0; i < slots; ++i) {
        Slot slot;
        slot.data = arena_.base() + i * slot_bytes_;
        slot.capacity = slot_bytes_;
        slots_.push_back(std::move(slot));
        free_.push_back(&slots_.back());
    }
}

BlockRing::Take BlockRing::take_free(Slot*& out, int timeout_ms) {
    std::unique_lock lock(mutex_);
    if (!free_changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return aborted_ || !free_.empty(); }))
        return Take::Timeout;
    if (aborted_) return Take::Closed;
    out = free_.back();  // the one freed last: its pages are mapped and likely in cache
    free_.pop_back();
    out->begin = out->used = out->referenced = 0;
    out->refs.clear();
    return Take::Got;
}

BlockRing::Take BlockRing::take_full(Slot*& out, int timeout_ms) {
    std::unique_lock lock(mutex_);
    if (!full_changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return aborted_ || !full_.empty() || full_closed_; }))
        return Take::Timeout;
    if (aborted_ || full_.empty()) return Take::Closed;
    out = full_.front();
    full_.pop_front();
    return Take::Got;
}

void BlockRing::put_free(Slot* s) {
    {
        std::lock_guard lock(mutex_);
        free_.push_back(s);
    }
    free_changed_.notify_one();
}

void BlockRing::put_full(Slot* s) {
    {
        std::lock_guard lock(mutex_);
        full_.push_back(s);
    }
    full_changed_.notify_one();
}

void BlockRing::close_full() {
    {
        std::lock_guard lock(mutex_);
        full_closed_ = true;
    }
    full_changed_.notify_all();
}

void BlockRing::abort() {
    {
        std::lock_guard lock(mutex_);
        aborted_ = true;
    }
    free_changed_.notify_all();
    full_changed_.notify_all();
}

std::size_t BlockRing::full_count() {
    std::lock_guard lock(mutex_);
    return full_.size();
}

}  // namespace slabcast::mover
