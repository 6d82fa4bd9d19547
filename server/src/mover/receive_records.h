// What the receiving side's files share (receive_*.cpp, all one
// ReceiveTransfer): how a ring slot holds the frames a stream's back end put
// there for the front-end writers (Balman et al., 2012, section 5.3: blocks
// tagged with their file and offset, through a shared set of memory blocks),
// and the words a frame is named in.
#pragma once

#include "mover/channel.h"
#include "mover/wire.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace slabcast::mover {

// In a receiving slot each frame other than Data (written by its stream:
// receive_direct.cpp) is a record: its header, then its payload (a
// FileFailed's reason), padded to 8 bytes.
inline constexpr std::size_t kRecordHead = (kHeaderBytes + 7) & ~std::size_t{7};

inline std::size_t record_bytes(std::size_t payload) { return kRecordHead + ((payload + 7) & ~std::size_t{7}); }

// The payload of an Error frame, which only a message may be (shown in logs
// and reports: peer_text.h).
std::string read_message(Channel& c, const Frame& f);
// A frame's kind in messages: "Manifest", "Data", ...
const char* kind_name(Kind k);

}  // namespace slabcast::mover
