// The shuffler's and stager's gate for sync packets, with real key files:
// authentication, the controller's address, replays, resends.
#include "base/key_file.h"
#include "control/sync_gate.h"
#include "temp_shm_dir.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <ctime>
#include <fstream>

using namespace slabcast;
using control::Sync;

namespace {

sockaddr_storage from(const char* ip) {
    sockaddr_storage s{};
    auto& a = reinterpret_cast<sockaddr_in&>(s);
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, ip, &a.sin_addr);
    return s;
}

std::int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

SyncGate::Verdict offer(SyncGate& gate, const Sync& s, const control::SyncKey* key, const char* ip = "10.0.0.5") {
    const auto bytes = control::encode(s, key);
    Sync out;
    return gate.admit(bytes.data(), bytes.size(), from(ip), out);
}

Sync sync(std::uint64_t session, std::uint32_t seq, std::int64_t time_ns) {
    Sync s{session, seq, static_cast<std::int32_t>(seq), "step.raw"};
    s.time_ns = time_ns;
    return s;
}

}  // namespace

TEST_CASE("keygen writes a 0600 key that loads; loose modes and bad contents are refused with the fix") {
    TempShmDir dir;
    const std::string path = dir.file("sync.key");
    write_new_key(path);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK_NOTHROW(load_sync_key(path));
    CHECK_THROWS_WITH(write_new_key(path), Catch::Contains("not overwritten"));
    ::chmod(path.c_str(), 0640);
    CHECK_THROWS_WITH(load_sync_key(path), Catch::Contains("can be read by group or others (mode 0640): chmod 600"));
    std::ofstream(dir.file("short.key")) << "abcd\n";
    ::chmod(dir.file("short.key").c_str(), 0600);
    CHECK_THROWS_WITH(load_sync_key(dir.file("short.key")), Catch::Contains("64 hexadecimal characters"));
    CHECK_THROWS_WITH(load_sync_key(dir.file("none.key")), Catch::Contains("slabcast keygen"));
}

TEST_CASE("with a key, only authenticated, fresh syncs from the controller get through") {
    TempShmDir dir;
    write_new_key(dir.file("k"));
    write_new_key(dir.file("wrong"));
    const auto key = load_sync_key(dir.file("k"));
    const auto wrong = load_sync_key(dir.file("wrong"));
    SyncGate gate("test", dir.file("k"), "10.0.0.5/32");
    const std::int64_t t = now_ns();

    CHECK(offer(gate, sync(1, 1, t), nullptr) == SyncGate::Verdict::Dropped);            // not authenticated
    CHECK(offer(gate, sync(1, 1, t), &wrong) == SyncGate::Verdict::Dropped);             // another key
    CHECK(offer(gate, sync(1, 1, t), &key, "10.0.0.6") == SyncGate::Verdict::Dropped);   // not the controller
    CHECK(offer(gate, sync(1, 1, t - 120'000'000'000), &key) == SyncGate::Verdict::Dropped);  // a 2-minute-old capture
    CHECK(offer(gate, sync(1, 1, t), &key) == SyncGate::Verdict::New);
    CHECK(offer(gate, sync(1, 1, t), &key) == SyncGate::Verdict::Repeat);  // the controller's resend
    CHECK(offer(gate, sync(1, 2, t + 1), &key) == SyncGate::Verdict::New);
    CHECK(offer(gate, sync(1, 1, t), &key) == SyncGate::Verdict::Repeat);  // older seq: not acted on
    // A restarted controller: new session, newer clock. A replay of an older session: refused.
    CHECK(offer(gate, sync(2, 1, t + 2), &key) == SyncGate::Verdict::New);
    CHECK(offer(gate, sync(1, 9, t + 1), &key) == SyncGate::Verdict::Dropped);
    CHECK(gate.last()->session == 2);
    CHECK(gate.dropped() == 5);
}

TEST_CASE("without a key, any well-formed sync is taken (and the gate warned about it)") {
    SyncGate gate("test", "", "");
    CHECK(offer(gate, sync(1, 1, 0), nullptr) == SyncGate::Verdict::New);
    const std::uint8_t junk[3] = {1, 2, 3};
    Sync out;
    CHECK(gate.admit(junk, sizeof junk, from("10.0.0.1"), out) == SyncGate::Verdict::Dropped);
}
