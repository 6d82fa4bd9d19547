// Where full raw run packets may land straight from the kernel: room at the
// end of what a stream sent in scan order has filled so far, in the slab
// buffer being written (docs/shared-memory.md: no reader sees that buffer
// until it is published, and a hole in it is filled at publication). The
// batch receiver lays datagram payloads end to end there; the slab receiver
// says which of them are exactly the run that belongs where they landed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slabcast {

class LandingSite {
public:
    struct Room {
        std::uint8_t* at = nullptr;
        std::size_t bytes = 0;  // 0: nothing may land now
    };
    virtual Room landing_room() const = 0;
    // Whether the datagram whose header is at `header` (`length` bytes in all)
    // and whose payload landed at `payload` is the run that belongs exactly there.
    virtual bool landed_in_place(const std::uint8_t* header, std::size_t length, const std::uint8_t* payload) const = 0;

protected:
    ~LandingSite() = default;
};

}  // namespace slabcast
