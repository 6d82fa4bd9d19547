// What one end of the data mover shows of what the other sent (mover/peer_text.h):
// its text only as printable characters, its JSON named in slabcast's words.
// A server's refusal, a client's Hello, a report and a path each get here over
// the code that reads them from the network.
#include "mover/channel.h"
#include "mover/auth.h"
#include "mover/hello.h"
#include "mover/manifest.h"
#include "mover/peer_text.h"
#include "mover/send_transfer.h"
#include "mover/stream_io.h"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>

using namespace slabcast::mover;

namespace {

// An escape that would recolour the terminal, a line of its own for the log, a bell and a DEL.
const std::string kHostile = "ok\x1b[31m red\nFAKE LOG LINE\r\x07\x7f end";

bool has_control(const std::string& s) {
    for (const unsigned char c : s)
        if (c < 0x20 || c == 0x7f) return true;
    return false;
}

std::string message_of(const std::function<void()>& run) {
    try {
        run();
    } catch (const std::exception& e) {
        return e.what();
    }
    FAIL("no exception");
    return "";
}

}  // namespace

TEST_CASE("a peer's text is shown without control characters, and at most 4 KiB of it") {
    CHECK(printable(kHostile) == "ok?[31m red?FAKE LOG LINE??? end");
    CHECK(printable("caf\xc3\xa9 \xff") == "caf\xc3\xa9 \xff");  // bytes >= 0x80 are no control characters
    CHECK(printable(std::string(10000, 'x')).size() == kMaxPeerText);
    CHECK(printable(std::string("a\0b", 3)) == "a?b");
}

TEST_CASE("a peer's JSON that is not JSON is named without the JSON library's message") {
    const std::string bad = "{\"files\": 1, \x1b[2J";
    const std::string why = message_of([&] { parse_peer_json(bad); });
    CHECK(why == "not JSON (" + std::to_string(bad.size()) + " bytes, malformed at byte 14)");
    CHECK_THAT(message_of([] { parse_peer_json("[1e999999]"); }), Catch::Contains("a number out of range"));
}

TEST_CASE("a malformed report from the server names the field, in slabcast's words") {
    const std::string good = R"({"files": 2, "in_place": 1, "failed": [{"path": "a", "why": "gone"}], "bytes_written": 9})";
    const TransferReport r = parse_report(good);
    CHECK(r.files == 2);
    CHECK(r.in_place == 1);
    CHECK(r.bytes_written == 9);
    REQUIRE(r.failed.size() == 1);
    CHECK(r.failed[0].path == "a");
    CHECK(r.failed[0].why == "gone");
    const std::pair<std::string, std::string> cases[] = {
        {"{\"files\": ", "the server's report is malformed: not JSON (10 bytes, malformed at byte 11)"},
        {"[]", "the server's report is malformed: not a JSON object"},
        {R"({"in_place": 0, "failed": [], "bytes_written": 0})", "the server's report is malformed: missing field 'files'"},
        {R"({"files": "2", "in_place": 0, "failed": [], "bytes_written": 0})",
         "the server's report is malformed: field 'files' must be a whole number"},
        {R"({"files": -1, "in_place": 0, "failed": [], "bytes_written": 0})",
         "the server's report is malformed: field 'files' is out of range"},
        {R"({"files": 1, "in_place": 0, "failed": {}, "bytes_written": 0})",
         "the server's report is malformed: field 'failed' must be a list"},
        {R"({"files": 1, "in_place": 0, "failed": [{"path": 5, "why": ""}], "bytes_written": 0})",
         "the server's report is malformed (a failed file): field 'path' has the wrong type"},
        {R"({"files": 1, "in_place": 0, "failed": [7], "bytes_written": 0})",
         "the server's report is malformed (a failed file): missing field 'path'"},
    };
    for (const auto& [text, why] : cases) {
        INFO(text);
        const std::string said = message_of([&] { parse_report(text); });
        CHECK(said == why);
        CHECK(said.find("json.exception") == std::string::npos);
    }
    // What the server says of a failed file is shown, never obeyed.
    const TransferReport hostile = parse_report(nlohmann::json{{"files", 0}, {"in_place", 0}, {"bytes_written", 0},
                                                               {"failed", {{{"path", kHostile}, {"why", kHostile}}}}}
                                                    .dump());
    CHECK_FALSE(has_control(hostile.failed.at(0).path));
    CHECK_FALSE(has_control(hostile.failed.at(0).why));
}

TEST_CASE("a Hello that is not JSON, or names a path with control characters, is refused in printable words") {
    CHECK(message_of([] { parse_hello(1, "{\"stream\": 0, \x1b"); }) ==
          "the Hello is malformed: not JSON (15 bytes, malformed at byte 15)");
    const std::string dest = message_of([] { parse_hello(1, nlohmann::json{{"stream", 0}, {"dest", kHostile}}.dump()); });
    CHECK_THAT(dest, Catch::Contains("a control character"));
    CHECK_FALSE(has_control(dest));
    const std::string get = message_of([] { parse_hello(1, R"({"stream": 0, "get": [{"x": "\u001b[2J"}]})"); });
    CHECK(get == "a pull asks for a JSON object, not a path");
    CHECK(parse_hello(9, R"({"stream": 3, "dest": "a/b/"})").dest == "a/b");
}

TEST_CASE("a server's refusal reaches the client's message without its control characters") {
    int ends[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
    // A server that refuses at once, in place of its Challenge.
    write_frame(ends[0], Frame{Kind::Error}, kHostile.data(), kHostile.size());
    ClientHandshake client(std::nullopt);
    const std::string refused = message_of([&] { client.send_hello(ends[1], 1, "{}", 2); });
    CHECK(refused == "the server refused the connection: " + printable(kHostile));
    ::close(ends[0]);
    ::close(ends[1]);

    // A server with the key that answers the Hello with an Error instead of its proof.
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
    Key key;
    key.bytes.fill(7);
    ServerHandshake server(key);
    ClientHandshake keyed(key);
    server.send_challenge(ends[0]);
    keyed.send_hello(ends[1], 1, "{}", 2);
    write_frame(ends[0], Frame{Kind::Error}, kHostile.data(), kHostile.size());
    CHECK(message_of([&] { keyed.expect_proof(ends[1], 2); }) == printable(kHostile));
    ::close(ends[0]);
    ::close(ends[1]);
}
