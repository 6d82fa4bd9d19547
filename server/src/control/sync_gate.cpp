#include "control/sync_gate.h"

#include "base/key_file.h"
#include "base/udp.h"

#include "slabcast/clock.h"

#include <spdlog/spdlog.h>

namespace slabcast {

SyncGate::SyncGate(std::string role, const std::string& key_file, const std::string& controller)
    : role_(std::move(role)) {
    if (!key_file.empty()) key_ = load_sync_key(key_file);
    if (!controller.empty()) controller_.add_list(controller);
    if (!key_)
        spdlog::warn("{}: sync packets are not authenticated (no --key-file): anyone who can reach the sync port "
                     "can choose which staged step is sent",
                     role_);
    if (controller_.empty() && !key_) spdlog::warn("{}: syncs accepted from any address (no --controller)", role_);
}

SyncGate::Verdict SyncGate::drop(const std::string& why, const sockaddr_storage& from) {
    ++dropped_;
    // Once per kind of problem would hide an attack in progress; every 1000th keeps logs bounded.
    if (dropped_ <= 10 || dropped_ % 1000 == 0)
        spdlog::warn("{}: dropped a sync packet from {}: {} ({} dropped so far)", role_, to_string(from), why, dropped_);
    return Verdict::Dropped;
}

SyncGate::Verdict SyncGate::admit(const std::uint8_t* data, std::size_t length, const sockaddr_storage& from,
                                  control::Sync& out) {
    if (!controller_.empty() && !controller_.allows(from)) return drop("not from the controller", from);
    const auto sync = control::decode_sync(data, length, key_ ? &*key_ : nullptr);
    if (!sync) return drop("malformed", from);
    if (key_ && !sync->verified) return drop(sync->signed_ ? "bad authentication tag" : "not authenticated", from);
    if (!control::supersedes(*sync, last_)) {
        out = *sync;
        return Verdict::Repeat;
    }
    if (key_) {
        // Within a session the sequence number orders syncs; a recorded sync of
        // an earlier session is told apart by the controller's clock.
        if (last_ && sync->session != last_->session && sync->time_ns <= last_->time_ns)
            return drop("replayed (older than the last accepted sync)", from);
        const std::int64_t age = realtime_ns() - sync->time_ns;
        if (!last_ && (age > kFreshnessNs || age < -kFreshnessNs))
            return drop("too old, or the clocks differ by more than 60 s", from);
    }
    last_ = sync;
    out = *sync;
    return Verdict::New;
}

}  // namespace slabcast
