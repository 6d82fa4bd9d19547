#include "shuffle/parallel_packer.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace slabcast {

ParallelPacker::Part::Part(const PackerLayout& l, std::int64_t z_begin, std::int64_t z_end, std::int64_t ghost_planes,
                           int batch_packets, bool gso)
    : walker(l.dims, z_begin, z_end, l.order, l.wire, l.codec, ghost_planes, l.most_packet_bytes),
      offset((z_begin - l.z_begin) * l.dims.plane()) {
    ring.reserve(kRing);
    for (std::size_t i = 0; i < kRing; ++i) ring.emplace_back(batch_packets, gso);
}

ParallelPacker::ParallelPacker(const PackerLayout& l, int threads, int batch_packets, bool gso) : slab_(l.slab) {
    if (threads < 2 || threads > kMostThreads)
        throw std::invalid_argument("encode threads " + std::to_string(threads) + ": expected 2.." +
                                    std::to_string(kMostThreads) + " (1 packs in the sending thread)");
    // The owned planes are shared out; the ghost plane, below them, goes with
    // the first part (its walk sends it where a single walker would).
    const std::int64_t owned = std::max<std::int64_t>(1, l.z_end - l.z_begin - l.ghost_planes);
    const std::int64_t n = std::min<std::int64_t>(threads, owned);
    const std::int64_t first = l.z_end - owned;
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t from = k == 0 ? l.z_begin : first + owned * k / n, to = first + owned * (k + 1) / n;
        parts_.push_back(std::make_unique<Part>(l, from, to, k == 0 ? first - l.z_begin : 0, batch_packets, gso));
    }
    for (auto& part : parts_) part->thread = std::thread([this, p = part.get()] { work(*p); });
}

ParallelPacker::~ParallelPacker() {
    end_step();
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    room_.notify_all();
    for (auto& part : parts_) part->thread.join();
}

void ParallelPacker::begin_step(std::int32_t step, const float* planes) {
    end_step();
    {
        std::lock_guard lock(mutex_);
        for (auto& part : parts_) {
            part->head = part->filled = 0;
            part->done = false;
        }
        planes_ = planes;
        step_ = step;
        turn_ = 0;
        ++generation_;
    }
    room_.notify_all();
}

void ParallelPacker::end_step() {
    std::unique_lock lock(mutex_);
    planes_ = nullptr;
    taken_ = nullptr;
    ++generation_;
    room_.notify_all();
    packed_.wait(lock, [&] { return reading_ == 0; });
}

void ParallelPacker::work(Part& part) {
    std::unique_lock lock(mutex_);
    // 0, not generation_: a step begun before this thread first ran is still its to pack.
    std::uint64_t seen = 0;
    for (;;) {
        room_.wait(lock, [&] { return closing_ || (generation_ != seen && planes_); });
        if (closing_) return;
        seen = generation_;
        ++reading_;
        pack_step(part, lock, seen);
        --reading_;
        packed_.notify_all();
    }
}

// Packs the part's batches of the step while `generation` holds: the lock is
// let go while a batch is packed, so the sender sends the one before meanwhile.
void ParallelPacker::pack_step(Part& part, std::unique_lock<std::mutex>& lock, std::uint64_t generation) {
    const float* planes = planes_ + part.offset;
    const std::int32_t step = step_;
    part.walker.reset();
    for (bool last = false; !last;) {
        room_.wait(lock, [&] { return closing_ || generation_ != generation || part.filled < part.ring.size(); });
        if (closing_ || generation_ != generation) return;
        Batch& batch = part.ring[(part.head + part.filled) % part.ring.size()];
        lock.unlock();
        const SlabWalker::Filled filled = part.walker.fill_batch(batch.datagrams, planes, step, slab_);
        batch.values = filled.values;
        last = filled.last;
        lock.lock();
        if (generation_ != generation) return;  // the step ended while it was packed
        if (batch.datagrams.count() > 0) ++part.filled;
        part.done = last;
        packed_.notify_all();
    }
}

ParallelPacker::Batch* ParallelPacker::take() {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (!planes_) return nullptr;
        Part& part = *parts_[turn_];
        if (part.filled > 0) {
            taken_ = &part;
            turn_ = (turn_ + 1) % parts_.size();
            return &part.ring[part.head];
        }
        if (!part.done) {
            packed_.wait(lock);
            continue;
        }
        const bool all_sent = std::all_of(parts_.begin(), parts_.end(), [](const auto& p) {
            return p->done && p->filled == 0;
        });
        if (all_sent) return nullptr;
        turn_ = (turn_ + 1) % parts_.size();
    }
}

void ParallelPacker::give_back() {
    {
        std::lock_guard lock(mutex_);
        if (!taken_) return;  // the step ended meanwhile
        taken_->head = (taken_->head + 1) % taken_->ring.size();
        --taken_->filled;
        taken_ = nullptr;
    }
    room_.notify_all();
}

std::uint64_t ParallelPacker::total_packets() const {
    std::uint64_t n = 0;
    for (const auto& part : parts_) n += part->walker.total_packets();
    return n;
}

std::uint64_t ParallelPacker::total_values() const {
    std::uint64_t n = 0;
    for (const auto& part : parts_) n += part->walker.total_records();
    return n;
}

}  // namespace slabcast
