// The data mover's frame header, its file checksum and its resume journal.
#include "mover/channel.h"
#include "mover/dest_tree.h"
#include "mover/journal.h"
#include "mover/stream_io.h"
#include "mover/wire.h"
#include "temp_shm_dir.h"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <vector>

using namespace slabcast::mover;
using slabcast::UniqueFd;

TEST_CASE("a frame header decodes to what was encoded, and a damaged one is refused") {
    const Frame f{Kind::Data, 0x0123456789abcdefULL, 42, 4096, 8u << 20, 0xfeedfacecafebeefULL, 77};
    std::uint8_t bytes[kHeaderBytes];
    encode_header(f, bytes);
    const auto back = decode_header(bytes);
    REQUIRE(back);
    CHECK(back->kind == f.kind);
    CHECK(back->transfer == f.transfer);
    CHECK(back->file == f.file);
    CHECK(back->length == f.length);
    CHECK(back->offset == f.offset);
    CHECK(back->checksum == f.checksum);
    CHECK(back->extra == f.extra);
    std::string why;
    bytes[4] ^= 0xFF;  // the version
    CHECK_FALSE(decode_header(bytes, &why));
    CHECK(why.find("version") != std::string::npos);
}

TEST_CASE("zeros_checksum is the checksum of that many zero bytes") {
    for (std::uint64_t n : {0ULL, 1ULL, 4095ULL, 65536ULL, 65537ULL, 4194304ULL}) {
        const std::vector<std::uint8_t> zeros(n);
        CHECK(zeros_checksum(n) == checksum(zeros.data(), zeros.size()));
        CHECK(zeros_checksum(n) == checksum(zeros.data(), zeros.size()));  // remembered, still right
    }
}

TEST_CASE("a file checksum changes with any block's checksum, their order and their count") {
    const std::vector<std::uint64_t> sums{11, 22, 33};
    const std::uint64_t base = file_checksum(sums.data(), sums.size());
    CHECK(base == file_checksum(sums.data(), sums.size()));
    const std::vector<std::uint64_t> swapped{22, 11, 33}, changed{11, 22, 34}, shorter{11, 22};
    CHECK(file_checksum(swapped.data(), 3) != base);
    CHECK(file_checksum(changed.data(), 3) != base);
    CHECK(file_checksum(shorter.data(), 2) != base);
    CHECK(file_checksum(nullptr, 0) == checksum(nullptr, 0));  // an empty file
}

TEST_CASE("the journal gives back each block's checksum; a torn last line and other versions do not count") {
    TempShmDir dir;
    DestTree tree(dir.path);
    const Journal::Version b_nc{100, 5, 64}, c_old{10, 1, 64}, c_new{12, 2, 64};
    {
        Journal j(tree, "");
        j.block_written("a/b.nc", b_nc, 0, 0x1111);
        j.block_written("a/b.nc", b_nc, 64, 0xabcdef0123456789ULL);
        j.block_written("c.nc", c_old, 0, 7);
        j.block_written("c.nc", c_new, 0, 8);  // the file changed: only this run counts
    }
    {
        std::ofstream torn(dir.file(Journal::kName), std::ios::app);
        torn << "B 100 5 64 128 00000000000000ff a/b";  // killed mid-line: no newline
    }
    const auto known = Journal::read(tree, "", [&](const std::string& path) -> const Journal::Version* {
        return path == "a/b.nc" ? &b_nc : path == "c.nc" ? &c_new : nullptr;
    });
    REQUIRE(known.size() == 2);
    const auto& b = known.at("a/b.nc");
    CHECK(b.version == b_nc);
    CHECK(b.blocks == std::map<std::uint64_t, std::uint64_t>{{0, 0x1111}, {64, 0xabcdef0123456789ULL}});
    const auto& c = known.at("c.nc");
    CHECK(c.version == c_new);
    CHECK(c.blocks == std::map<std::uint64_t, std::uint64_t>{{0, 8}});
    // The old version of c.nc is not what a transfer of it wants now.
    const auto old = Journal::read(tree, "", [&](const std::string& path) -> const Journal::Version* {
        return path == "c.nc" ? &c_old : nullptr;
    });
    CHECK(old.empty());
}

TEST_CASE("a checksum taken a piece at a time is the checksum of the whole") {
    std::vector<std::uint8_t> block(3 * kCachePiece + 123);
    for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<std::uint8_t>(i * 31 + (i >> 11));
    RunningChecksum running;
    for (std::size_t at = 0; at < block.size(); at += kCachePiece)
        running.add(block.data() + at, std::min(kCachePiece, block.size() - at));
    CHECK(running.value() == checksum(block.data(), block.size()));
}

TEST_CASE("a peer that goes away is named as a lost connection, on sending and in the middle of a frame") {
    int ends[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
    UniqueFd mine(ends[0]);
    const std::uint8_t half_a_header[kHeaderBytes / 2] = {};
    write_full(ends[1], half_a_header, sizeof half_a_header);
    ::close(ends[1]);

    Frame f;
    std::string payload;
    CHECK_THROWS_WITH(read_frame(mine.get(), f, payload), Catch::Contains("closed the connection"));
    const std::vector<std::uint8_t> block(1 << 16);
    CHECK_THROWS_WITH(write_full(mine.get(), block.data(), block.size()), Catch::Contains("connection lost"));
}
