// How much memory this machine has to give, from /proc/meminfo: the one
// reader for the generator (its peak), the stager (whether the dataset stays
// cached) and the memory plan (what fits beside the slabs).
#pragma once

#include <cstdint>

namespace slabcast {

// MemAvailable: free memory plus what the kernel can reclaim (page cache);
// 0 where /proc/meminfo does not say.
std::uint64_t mem_available_bytes();

// Whether files of `bytes` in all, read over and over (a dataset, lap after
// lap), stay in the page cache between reads: under half of MemAvailable,
// which leaves the other half to what the processes themselves allocate.
bool stays_in_page_cache(std::uint64_t bytes);

}  // namespace slabcast
