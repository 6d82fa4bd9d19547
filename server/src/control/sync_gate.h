// What a shuffler or stager lets through of the sync packets it receives:
// only from the controller's address (--controller), only authenticated with
// the shared key (--key-file), never a replay. The paper's syncs (Balman et
// al., 2012, section 4.3) were neither; see docs/wire-format.md.
#pragma once

#include "base/address_filter.h"
#include "slabcast/control_packets.h"

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>

namespace slabcast {

class SyncGate {
public:
    // `key_file`, `controller`: empty for none (then a warning says what that allows).
    SyncGate(std::string role, const std::string& key_file, const std::string& controller);

    enum class Verdict {
        New,      // a newer order: act on it
        Repeat,   // the order already in hand (the controller resends until answered)
        Dropped,  // not from the controller, malformed, unauthenticated or replayed: logged and counted
    };
    Verdict admit(const std::uint8_t* data, std::size_t length, const sockaddr_storage& from, control::Sync& out);
    const std::optional<control::Sync>& last() const { return last_; }
    std::uint64_t dropped() const { return dropped_; }

    // A first authenticated sync may be at most this old (or this far ahead:
    // clocks differ) by our clock; later ones must be newer than the last.
    static constexpr std::int64_t kFreshnessNs = 60'000'000'000;

private:
    Verdict drop(const std::string& why, const sockaddr_storage& from);

    std::string role_;
    std::optional<control::SyncKey> key_;
    AddressFilter controller_;
    std::optional<control::Sync> last_;
    std::uint64_t dropped_ = 0;
};

}  // namespace slabcast
