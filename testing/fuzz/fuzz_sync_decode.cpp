// libFuzzer harness: the control-plane decoders (sync, with and without a key,
// and reply). A decoded sync's location must pass the location check, and
// re-encoding what was decoded must decode to the same thing.
#include "slabcast/control_packets.h"

#include <algorithm>
#include <cstdint>

using namespace slabcast::control;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const SyncKey key = [] {
        SyncKey k;
        k.bytes.fill(0x5a);
        return k;
    }();
    if (const auto keyed = decode_sync(data, size, &key); keyed && keyed->verified) {
        // Only a packet made with the key verifies; it must encode back to itself.
        const auto again = encode(*keyed, &key);
        if (again.size() != size || !std::equal(again.begin(), again.end(), data)) __builtin_trap();
    }
    if (const auto sync = decode_sync(data, size)) {
        if (!location_is_safe(sync->location)) __builtin_trap();
        const auto again = encode(*sync);
        const auto back = decode_sync(again.data(), again.size());
        if (!back || back->session != sync->session || back->seq != sync->seq || back->step != sync->step ||
            back->location != sync->location)
            __builtin_trap();
    }
    if (const auto reply = decode_reply(data, size)) {
        const auto again = encode(*reply);
        const auto back = decode_reply(again.data(), again.size());
        if (!back || back->kind != reply->kind || back->step != reply->step) __builtin_trap();
    }
    return 0;
}
