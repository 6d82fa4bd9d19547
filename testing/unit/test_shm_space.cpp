// A full tmpfs: every write into /dev/shm that could fault is either checked
// first or reserved with fallocate, so a full one is an error message, never
// the SIGBUS a page faulted into it would be. Each case runs in a child
// process with a private mount namespace holding a 1 MiB tmpfs (as root, or
// in a user namespace otherwise): a SIGBUS kills the child, and the test says so.
#include "base/host_checks.h"
#include "base/numa_placement.h"
#include "stage/staging_ring.h"

#include "slabcast/slab_file.h"

#include <catch2/catch.hpp>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

using namespace slabcast;

namespace {

// Runs `body(dir)` in a child whose `dir` is a fresh tmpfs of `size` bytes;
// returns what the body returned, or why the child failed (a signal, say).
std::string in_small_tmpfs(const std::string& size, const std::function<std::string(const std::string&)>& body) {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(pipe_fds[0]);
        std::string result;
        char dir[] = "/tmp/slabcast-tmpfs-XXXXXX";
        if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            result = std::string("cannot make a private mount namespace: ") + std::strerror(errno);
        else if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 || !::mkdtemp(dir) ||
                 ::mount("slabcast-test", dir, "tmpfs", 0, ("size=" + size).c_str()) != 0)
            result = std::string("cannot mount a small tmpfs: ") + std::strerror(errno);
        else {
            try {
                result = body(dir);
            } catch (const std::exception& e) {
                result = std::string("threw: ") + e.what();
            }
            ::umount(dir);
        }
        ::rmdir(dir);
        (void)!::write(pipe_fds[1], result.data(), result.size());
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string out;
    char buf[512];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) return "the child died of signal " + std::to_string(WTERMSIG(status)) + " (" +
                                    strsignal(WTERMSIG(status)) + ")";
    return out;
}

}  // namespace

TEST_CASE("pre-faulting a slab in a full tmpfs is an error naming the problem, not SIGBUS") {
    // The receiver's fallback used to touch every page when MADV_POPULATE_WRITE
    // failed: the first page beyond the tmpfs's size was a SIGBUS.
    const std::string got = in_small_tmpfs("1m", [](const std::string& dir) {
        const Dims dims{128, 128, 64};  // slab 0 of depth 32: 2.1 MiB of values
        SlabMapping m = SlabMapping::create(dir + "/v.slab0", dims, 32, slab_geometry(dims, 32, 0, 1), "density");
        try {
            bind_and_prefault(m.values_rw(0), m.layout().file_bytes - kSlabHeaderBytes, -1, m.fd(), kSlabHeaderBytes);
        } catch (const std::runtime_error& e) {
            return std::string("refused: ") + e.what();
        }
        return std::string("pre-faulted 2 MiB into a 1 MiB tmpfs?");
    });
    INFO(got);
    CHECK(got.rfind("refused: cannot fault its pages in", 0) == 0);
    CHECK(got.find("full") != std::string::npos);
}

TEST_CASE("a staging slot that a full tmpfs cannot hold fails at once with ENOSPC, naming the file and the space") {
    const std::string got = in_small_tmpfs("1m", [&](const std::string& dir) {
        StagingRing ring(take_staging_directory(dir), dir, 2u << 20, 2);
        ring.claim("step_0.raw", SourceStamp{});
        return std::string("reserved 2 MiB in a 1 MiB tmpfs?");
    });
    INFO(got);
    CHECK(got.find("threw: ") == 0);
    CHECK(got.find("/.slot-0: cannot reserve 2.0 MiB for a staging slot: No space left on device") != std::string::npos);
    CHECK(got.find("free)") != std::string::npos);
}

TEST_CASE("free space is told in the words a user acts on") {
    const std::string got = in_small_tmpfs("1m", [](const std::string& dir) {
        require_free_space(dir, 1u << 19, "half a MiB");
        require_free_space(dir, 2u << 20, "the slabs");
        return std::string("2 MiB fit a 1 MiB tmpfs?");
    });
    INFO(got);
    CHECK(got.find("threw: /tmp/slabcast-tmpfs-") == 0);
    CHECK(got.find(" has 1.0 MiB free, the slabs need 2.0 MiB") != std::string::npos);
}
