// The two owners every descriptor and mapping goes through (UniqueFd,
// MappedRegion): each closes or unmaps exactly once, whatever moves it, and a
// moved-from owner lets go of nothing. Checked against the kernel itself
// (fcntl(F_GETFD), /proc/self/fd, msync on the address), not the objects' word.
#include "slabcast/mapped_region.h"
#include "slabcast/unique_fd.h"
#include "temp_shm_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

using slabcast::MappedRegion;
using slabcast::UniqueFd;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_null() {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    return fd;
}

std::size_t open_descriptors() {
    std::size_t n = 0;
    DIR* d = ::opendir("/proc/self/fd");
    REQUIRE(d != nullptr);
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
    return n;
}

// Whether [base, base+length) is mapped in this process: msync answers ENOMEM
// for an address range that is not.
bool is_mapped(const void* base, std::size_t length) {
    return ::msync(const_cast<void*>(base), length, MS_ASYNC) == 0;
}

}  // namespace

TEST_CASE("a UniqueFd closes its descriptor when it goes, and an empty one closes nothing") {
    int number = -1;
    {
        const UniqueFd fd(open_null());
        number = fd.get();
        CHECK(fd.valid());
        CHECK(is_open(number));
    }
    CHECK_FALSE(is_open(number));
    const UniqueFd none;
    CHECK(none.get() == -1);
    CHECK_FALSE(none.valid());
    const UniqueFd failed(::open("/nonexistent/slabcast", O_RDONLY));  // a failed open holds nothing
    CHECK_FALSE(failed.valid());
}

TEST_CASE("a moved UniqueFd hands its descriptor over: the source is empty and closes nothing") {
    UniqueFd first(open_null());
    const int number = first.get();
    UniqueFd second(std::move(first));
    CHECK(first.get() == -1);
    CHECK(second.get() == number);

    // The number closed by its owner, then given to another file: the empty
    // source must not close that one when it goes (a double close would).
    second.reset();
    CHECK_FALSE(is_open(number));
    if (const int other = open_null(); other != number) {  // the kernel gives the lowest free number: likely it
        REQUIRE(::dup2(other, number) == number);
        ::close(other);
    }
    { UniqueFd gone = std::move(first); }
    CHECK(is_open(number));
    ::close(number);
}

TEST_CASE("move-assigning a UniqueFd closes what the target held, once") {
    UniqueFd a(open_null()), b(open_null());
    const int held_by_a = a.get(), held_by_b = b.get();
    a = std::move(b);
    CHECK_FALSE(is_open(held_by_a));
    CHECK(a.get() == held_by_b);
    CHECK(b.get() == -1);
    CHECK(is_open(held_by_b));
    auto& same = a;
    a = std::move(same);  // onto itself: keeps it
    CHECK(a.get() == held_by_b);
    CHECK(is_open(held_by_b));
}

TEST_CASE("release() hands the descriptor to the caller and reset() closes the old one") {
    int number = -1;
    {
        UniqueFd fd(open_null());
        number = fd.release();
        CHECK(fd.get() == -1);
    }
    CHECK(is_open(number));  // the caller's now
    UniqueFd fd(number);
    const int next = open_null();
    fd.reset(next);
    CHECK_FALSE(is_open(number));
    CHECK(fd.get() == next);
    fd.reset(next);  // the one it holds: kept, not closed
    CHECK(is_open(next));
}

TEST_CASE("UniqueFds moved around in a container leave no descriptor open behind them") {
    const std::size_t before = open_descriptors();
    {
        std::vector<UniqueFd> fds;
        for (int i = 0; i < 200; ++i) fds.emplace_back(open_null());  // grows: every element moves
        CHECK(open_descriptors() == before + 200);
        std::vector<UniqueFd> moved = std::move(fds);
        moved.erase(moved.begin(), moved.begin() + 50);
        CHECK(open_descriptors() == before + 150);
    }
    CHECK(open_descriptors() == before);
}

TEST_CASE("a MappedRegion unmaps when it goes; a moved one is empty and unmaps nothing") {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::uint8_t* base = nullptr;
    {
        MappedRegion first = MappedRegion::map(4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
        REQUIRE(first.valid());
        CHECK(first.length() == 4 * page);
        base = first.base();
        base[page] = 42;
        MappedRegion second(std::move(first));
        CHECK_FALSE(first.valid());
        CHECK(first.base() == nullptr);
        CHECK(first.length() == 0);
        CHECK(second.base() == base);
        CHECK(second.base()[page] == 42);
        { MappedRegion gone = std::move(first); }
        CHECK(is_mapped(base, 4 * page));
    }
    CHECK_FALSE(is_mapped(base, 4 * page));
}

TEST_CASE("move-assigning a MappedRegion unmaps what the target held; reset() unmaps now") {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    MappedRegion a = MappedRegion::map(page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    MappedRegion b = MappedRegion::map(2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    REQUIRE((a.valid() && b.valid()));
    const std::uint8_t *held_by_a = a.base(), *held_by_b = b.base();
    a = std::move(b);
    CHECK_FALSE(is_mapped(held_by_a, page));
    CHECK(a.base() == held_by_b);
    CHECK(a.length() == 2 * page);
    CHECK_FALSE(b.valid());
    a.reset();
    CHECK_FALSE(a.valid());
    CHECK_FALSE(is_mapped(held_by_b, 2 * page));
}

TEST_CASE("a failed map is an empty region with mmap's errno, for the caller's message") {
    errno = 0;
    const MappedRegion bad_fd = MappedRegion::map(4096, PROT_READ, MAP_SHARED, -1);
    CHECK_FALSE(bad_fd.valid());
    CHECK(errno == EBADF);
    errno = 0;
    const MappedRegion nothing = MappedRegion::map(0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    CHECK_FALSE(nothing.valid());
    CHECK(errno == EINVAL);
}

TEST_CASE("a file's mapping outlives its descriptor (a staged step's, a slab's)") {
    TempShmDir dir;
    const std::string path = dir.file("mapped");
    MappedRegion region;
    {
        const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        REQUIRE(fd.valid());
        REQUIRE(::ftruncate(fd.get(), 8192) == 0);
        region = MappedRegion::map(8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
        REQUIRE(region.valid());
    }
    std::memcpy(region.base() + 4096, "slab", 4);
    region.reset();
    const UniqueFd again(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    char got[4] = {};
    REQUIRE(::pread(again.get(), got, sizeof got, 4096) == 4);
    CHECK(std::memcmp(got, "slab", 4) == 0);
}
