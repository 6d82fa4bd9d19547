#include "stage/staged_step.h"

#include "slabcast/unique_fd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace slabcast {

StagedStep StagedStep::open(const std::string& path, std::uint64_t expected_bytes, std::string& problem) {
    StagedStep s;
    // The sync packet names the file, so it must stay a plain file in the
    // staging directory: the name has no '/' (control::location_is_safe), a
    // symbolic link is refused (O_NOFOLLOW: it could point anywhere), and so is
    // anything but a regular file (O_NONBLOCK: a FIFO must not hang us).
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd.valid()) {
        problem = path + (errno == ELOOP ? ": is a symbolic link; refused (staged steps must be plain files)"
                                         : ": " + std::string(std::strerror(errno)));
        return s;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        problem = path + ": not a regular file; refused";
        return s;
    }
    if (static_cast<std::uint64_t>(st.st_size) != expected_bytes) {
        problem = path + ": " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(expected_bytes);
        return s;
    }
    // The mapping keeps the file; the descriptor is closed on return.
    s.region_ = MappedRegion::map(expected_bytes, PROT_READ, MAP_SHARED, fd.get());
    if (!s.region_.valid()) {
        problem = path + ": cannot map: " + std::strerror(errno);
        return s;
    }
    ::madvise(s.region_.base(), expected_bytes, MADV_SEQUENTIAL);
    return s;
}

void StagedStep::prefault(std::size_t offset, std::size_t length) const {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t begin = offset / page * page;
    ::madvise(region_.base() + begin, std::min(region_.length(), offset + length) - begin, MADV_POPULATE_READ);
}

std::string done_marker_path(const std::string& staging, const std::string& location, int stream) {
    return staging + "/" + location + ".done." + std::to_string(stream);
}

void write_done_marker(const std::string& staging, const std::string& location, int stream) {
    const std::string path = done_marker_path(staging, location, stream);
    const UniqueFd marker(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (!marker.valid()) spdlog::warn("cannot write done marker {}: {}", path, std::strerror(errno));
}

}  // namespace slabcast
