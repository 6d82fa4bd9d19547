#include "stage/step_copier.h"

#include "host/host_checks.h"

#include "slabcast/units.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast {

StepCopier::StepCopier(const std::string& source, const std::string& destination, std::uint64_t expected_bytes,
                       bool drop_source_cache)
    : source_(source), destination_(destination), total_(expected_bytes), drop_source_cache_(drop_source_cache) {
    const auto slash = destination.find_last_of('/');
    partial_ = destination.substr(0, slash + 1) + "." + destination.substr(slash + 1) + ".partial";
    in_.reset(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in_.valid()) throw std::runtime_error(source + ": cannot open step file: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(in_.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != expected_bytes)
        throw std::runtime_error(source + ": step file is " + std::to_string(st.st_size) + " bytes, expected " +
                                 std::to_string(expected_bytes) + " (NX*NY*NZ float32)");
    ::posix_fadvise(in_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    // Never through a symbolic link planted under the partial's name.
    ::unlink(partial_.c_str());
    out_.reset(::open(partial_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
    if (!out_.valid() || ::ftruncate(out_.get(), static_cast<off_t>(total_)) != 0) {
        const std::string why = std::strerror(errno);
        ::unlink(partial_.c_str());
        throw std::runtime_error(partial_ + ": cannot create staged copy: " + why);
    }
    // Every page reserved now: a copy into a full tmpfs fails here, before
    // anything is read, rather than with ENOSPC part of the way through.
    if (const int rc = total_ > 0 ? ::posix_fallocate(out_.get(), 0, static_cast<off_t>(total_)) : 0; rc != 0) {
        ::unlink(partial_.c_str());
        const std::string dir = partial_.substr(0, partial_.find_last_of('/') + 1);
        throw std::runtime_error(partial_ + ": cannot reserve " + format_bytes(total_) + " for the staged step: " +
                                 std::strerror(rc) + " (" + dir + " has " + format_bytes(free_bytes(dir + ".")) +
                                 " free)");
    }
}

StepCopier::~StepCopier() {
    if (!finished_) ::unlink(partial_.c_str());
}

bool StepCopier::advance(std::uint64_t max_bytes) {
    const std::uint64_t end = std::min(total_, copied_ + max_bytes);
    while (copied_ < end) {
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(end - copied_, 16u << 20));
        // The source offset is ours; the copy's file position moves with it
        // (nothing else writes to out_), so byte k lands at offset k.
        off_t from = static_cast<off_t>(copied_);
        const ssize_t n = ::sendfile(out_.get(), in_.get(), &from, want);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(source_ + ": copy failed at byte " + std::to_string(copied_) + ": " +
                                             (n == 0 ? "unexpected end of file" : std::strerror(errno)));
        if (drop_source_cache_) ::posix_fadvise(in_.get(), static_cast<off_t>(copied_), n, POSIX_FADV_DONTNEED);
        copied_ += static_cast<std::uint64_t>(n);
    }
    if (copied_ < total_) return false;
    if (::rename(partial_.c_str(), destination_.c_str()) != 0)
        throw std::runtime_error(destination_ + ": cannot rename staged step into place: " + std::strerror(errno));
    finished_ = true;
    return true;
}

}  // namespace slabcast
