#include "stage/staged_step.h"

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

StagedStep::StagedStep(StagedStep&& o) noexcept : base_(o.base_), size_(o.size_) {
    o.base_ = nullptr;
    o.size_ = 0;
}

StagedStep& StagedStep::operator=(StagedStep&& o) noexcept {
    if (this != &o) {
        if (base_) ::munmap(base_, size_);
        base_ = o.base_;
        size_ = o.size_;
        o.base_ = nullptr;
        o.size_ = 0;
    }
    return *this;
}

StagedStep::~StagedStep() {
    if (base_) ::munmap(base_, size_);
}

StagedStep StagedStep::open(const std::string& path, std::uint64_t expected_bytes, std::string& problem) {
    StagedStep s;
    // The sync packet names the file, so it must stay a plain file in the
    // staging directory: the name has no '/' (control::location_is_safe), a
    // symbolic link is refused (O_NOFOLLOW: it could point anywhere), and so is
    // anything but a regular file (O_NONBLOCK: a FIFO must not hang us).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        problem = path + (errno == ELOOP ? ": is a symbolic link; refused (staged steps must be plain files)"
                                         : ": " + std::string(std::strerror(errno)));
        return s;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        problem = path + ": not a regular file; refused";
        ::close(fd);
        return s;
    }
    if (static_cast<std::uint64_t>(st.st_size) != expected_bytes) {
        problem = path + ": " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(expected_bytes);
        ::close(fd);
        return s;
    }
    void* p = ::mmap(nullptr, expected_bytes, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        problem = path + ": cannot map: " + std::strerror(errno);
        return s;
    }
    ::madvise(p, expected_bytes, MADV_SEQUENTIAL);
    s.base_ = p;
    s.size_ = expected_bytes;
    return s;
}

void StagedStep::prefault(std::size_t offset, std::size_t length) const {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t begin = offset / page * page;
    ::madvise(static_cast<std::uint8_t*>(base_) + begin, std::min(size_, offset + length) - begin, MADV_POPULATE_READ);
}

std::string done_marker_path(const std::string& staging, const std::string& location, int stream) {
    return staging + "/" + location + ".done." + std::to_string(stream);
}

void write_done_marker(const std::string& staging, const std::string& location, int stream) {
    const std::string path = done_marker_path(staging, location, stream);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) spdlog::warn("cannot write done marker {}: {}", path, std::strerror(errno));
    else ::close(fd);
}

}  // namespace slabcast
