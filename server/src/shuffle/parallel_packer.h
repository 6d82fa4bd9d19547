// One stream's steps packed on several threads (`--encode-threads N`). A lossy
// codec costs a core more per value than the kernel's UDP path does (quant:8
// encodes about 600 Mvoxel/s a core, 2.4 GB/s of values: docs/performance.md,
// "Codecs"), so on a path faster than one core encodes, the encoder and not the
// path would bound the stream, which is what the paper's streams are built to
// avoid (Balman et al., 2012, section 4.2). It needs cores to spare: measured
// only on a 2-core host so far, where it was slower than one thread
// (docs/performance.md, "Over a WAN path"). The slab's planes are cut into
// parts of about equal depth, each packed by a walker of its own on a thread
// of its own into a small ring of batches made once; the sending thread takes
// a batch from each part in turn. Every packet names its first voxel, so the
// receiver takes them in any order, and each part keeps the walk's order
// within itself (progressive: coarse first in each part).
#pragma once

#include "shuffle/datagram_batch.h"
#include "shuffle/slab_walker.h"

#include "slabcast/quad_packet.h"
#include "slabcast/run_codec.h"
#include "slabcast/volume.h"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace slabcast {

struct PackerLayout {
    Dims dims;
    std::int64_t z_begin = 0, z_end = 0, ghost_planes = 0;
    std::int32_t slab = 0;
    SendOrder order = SendOrder::Scan;
    WireFormat wire = WireFormat::Run;
    run::CodecChoice codec;
    std::size_t most_packet_bytes = quad::kMaxPacketBytes;  // shorter with FEC (slabcast/fec_packet.h)
};

class ParallelPacker {
public:
    static constexpr int kMostThreads = 32;

    struct Batch {
        Batch(int packets, bool gso) : datagrams(packets, quad::kMaxPacketBytes, gso) {}
        DatagramBatch datagrams;
        std::uint64_t values = 0;
    };

    // `threads` parts at most (fewer when the slab has fewer planes than
    // that), each with batches of `batch_packets` packets. Throws
    // std::invalid_argument for a thread count outside 2..kMostThreads.
    ParallelPacker(const PackerLayout& layout, int threads, int batch_packets, bool gso);
    ~ParallelPacker();  // ends the step, then the threads
    ParallelPacker(const ParallelPacker&) = delete;
    ParallelPacker& operator=(const ParallelPacker&) = delete;

    // Starts packing step `step` from `planes` (the layout's planes, x
    // fastest), which must stay valid until end_step(). A step in progress is ended.
    void begin_step(std::int32_t step, const float* planes);
    // Returns once no thread reads the step's values; its batches not yet taken are dropped.
    void end_step();
    // The next packed batch, from each part in turn; nullptr when the step
    // has none left. The caller sends it, then calls give_back().
    Batch* take();
    void give_back();

    int parts() const { return static_cast<int>(parts_.size()); }
    std::uint64_t total_packets() const;
    std::uint64_t total_values() const;
    std::size_t fixed_packet_bytes() const { return parts_.front()->walker.fixed_packet_bytes(); }

private:
    static constexpr std::size_t kRing = 4;  // batches a part packs ahead of the sender
    struct Part {
        Part(const PackerLayout& layout, std::int64_t z_begin, std::int64_t z_end, std::int64_t ghost_planes,
             int batch_packets, bool gso);
        SlabWalker walker;
        std::int64_t offset;  // the part's first value, counted from the layout's first plane
        std::vector<Batch> ring;
        std::size_t head = 0, filled = 0;  // ring[head] is taken next; filled: packed, not yet given back
        bool done = false;                 // the part's last batch is packed
        std::thread thread;
    };
    void work(Part& part);
    void pack_step(Part& part, std::unique_lock<std::mutex>& lock, std::uint64_t generation);

    std::int32_t slab_;
    std::vector<std::unique_ptr<Part>> parts_;
    std::mutex mutex_;
    std::condition_variable room_;    // the sender (or a new step) to the parts
    std::condition_variable packed_;  // the parts to the sender
    std::uint64_t generation_ = 0;    // counts step starts and ends: a part packs while it holds
    const float* planes_ = nullptr;
    std::int32_t step_ = -1;
    int reading_ = 0;  // parts reading the step's values
    bool closing_ = false;
    std::size_t turn_ = 0;
    Part* taken_ = nullptr;
};

}  // namespace slabcast
