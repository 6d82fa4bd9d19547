// `receive --allow`: which senders each stream takes packets from (a
// datagram from anyone else is counted as foreign and dropped unread).
#pragma once

#include "receive/receive_stream.h"

#include <map>
#include <string>
#include <vector>

namespace slabcast {

// --allow CIDR[,CIDR...] for every stream, --allow K=CIDR[,...] for stream K;
// says for each stream what it accepts, and warns for a stream open to all.
// Throws std::invalid_argument naming a bad item.
void apply_allowlist(const std::vector<std::string>& items, const std::map<int, Stream*>& by_slab);

}  // namespace slabcast
