#include "stage/staged_step.h"

#include <fcntl.h>
#include <sys/file.h>
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

const StagedStep* StagedSteps::hold(const std::string& path, std::uint64_t expected_bytes, std::string& problem) {
    release();
    // The sync packet names the file, so it must stay a plain file in the
    // staging directory: the name has no '/' (control::location_is_safe), a
    // symbolic link is refused (O_NOFOLLOW: it could point anywhere), and so is
    // anything but a regular file (O_NONBLOCK: a FIFO must not hang us).
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd.valid()) {
        problem = path + (errno == ELOOP ? ": is a symbolic link; refused (staged steps must be plain files)"
                                         : ": " + std::string(std::strerror(errno)));
        return nullptr;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        problem = path + ": not a regular file; refused";
        return nullptr;
    }
    if (static_cast<std::uint64_t>(st.st_size) != expected_bytes) {
        problem = path + ": " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(expected_bytes);
        return nullptr;
    }
    // Slots the stager has removed (it stopped, or restarted) are let go; the
    // rest stay mapped. An open descriptor keeps each inode number ours.
    steps_.erase(std::remove_if(steps_.begin(), steps_.end(),
                                [](const std::unique_ptr<StagedStep>& s) {
                                    struct stat now {};
                                    return ::fstat(s->fd_.get(), &now) != 0 || now.st_nlink == 0;
                                }),
                 steps_.end());
    auto known = std::find_if(steps_.begin(), steps_.end(), [&](const std::unique_ptr<StagedStep>& s) {
        return s->device_ == st.st_dev && s->inode_ == st.st_ino;
    });
    if (known == steps_.end()) {
        auto step = std::make_unique<StagedStep>();
        step->region_ = MappedRegion::map(expected_bytes, PROT_READ, MAP_SHARED, fd.get());
        if (!step->region_.valid()) {
            problem = path + ": cannot map: " + std::strerror(errno);
            return nullptr;
        }
        ::madvise(step->region_.base(), expected_bytes, MADV_SEQUENTIAL);
        step->fd_ = std::move(fd);
        step->device_ = st.st_dev;
        step->inode_ = st.st_ino;
        steps_.push_back(std::move(step));
        known = steps_.end() - 1;
    }
    StagedStep& step = **known;
    if (::flock(step.fd_.get(), LOCK_SH | LOCK_NB) != 0) {
        problem = path + ": being restaged";
        return nullptr;
    }
    // Between the open and the lock, the stager may have moved the name on
    // and rewritten the slot: the name must still be this slot's.
    struct stat again {};
    if (::stat(path.c_str(), &again) != 0 || again.st_dev != step.device_ || again.st_ino != step.inode_) {
        ::flock(step.fd_.get(), LOCK_UN);
        problem = path + ": restaged while opened";
        return nullptr;
    }
    held_ = &step;
    return held_;
}

void StagedSteps::release() {
    if (held_) ::flock(held_->fd_.get(), LOCK_UN);
    held_ = nullptr;
}

void StagedStep::prefault(std::size_t offset, std::size_t length) const {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t begin = offset / page * page, end = std::min(region_.length(), offset + length);
    if (begin >= end) return;
    if (::madvise(region_.base() + begin, end - begin, MADV_POPULATE_READ) == 0)
        prefaulted_end_ = std::max(prefaulted_end_, end);
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
