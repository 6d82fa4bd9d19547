#include "stage/step_copier.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast {

StepCopier::StepCopier(const std::string& source, int slot, std::uint64_t expected_bytes, bool drop_source_cache)
    : source_(source), slot_(slot), total_(expected_bytes), drop_source_cache_(drop_source_cache) {
    in_.reset(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in_.valid()) throw std::runtime_error(source + ": cannot open step file: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(in_.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != expected_bytes)
        throw std::runtime_error(source + ": step file is " + std::to_string(st.st_size) + " bytes, expected " +
                                 std::to_string(expected_bytes) + " (NX*NY*NZ float32)");
    ::posix_fadvise(in_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    if (::lseek(slot_, 0, SEEK_SET) != 0)
        throw std::runtime_error(source + ": cannot copy into the staging slot: " + std::strerror(errno));
}

bool StepCopier::advance(std::uint64_t max_bytes) {
    const std::uint64_t end = std::min(total_, copied_ + max_bytes);
    while (copied_ < end) {
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(end - copied_, 16u << 20));
        // The source offset is ours; the slot's file position moves with it
        // from 0 (nothing else writes to the slot), so byte k lands at offset k.
        off_t from = static_cast<off_t>(copied_);
        const ssize_t n = ::sendfile(slot_, in_.get(), &from, want);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(source_ + ": copy failed at byte " + std::to_string(copied_) + ": " +
                                             (n == 0 ? "unexpected end of file" : std::strerror(errno)));
        if (drop_source_cache_) ::posix_fadvise(in_.get(), static_cast<off_t>(copied_), n, POSIX_FADV_DONTNEED);
        copied_ += static_cast<std::uint64_t>(n);
    }
    return copied_ == total_;
}

StepDecoder::StepDecoder(const std::string& source, StepCodec codec, int slot, std::uint64_t expected_bytes)
    : reader_(source, codec, expected_bytes), slot_(slot), total_(expected_bytes), piece_(std::size_t{1} << 20) {}

bool StepDecoder::advance(std::uint64_t max_bytes) {
    const std::uint64_t end = std::min(total_, copied_ + max_bytes);
    while (copied_ < end) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(end - copied_, piece_.size()));
        reader_.read(piece_.data(), n);
        for (std::size_t done = 0; done < n;) {
            const ssize_t w = ::pwrite(slot_, piece_.data() + done, n - done, static_cast<off_t>(copied_ + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) throw std::runtime_error(reader_.path() + ": cannot write into the staging slot: " +
                                                 std::strerror(errno));
            done += static_cast<std::size_t>(w);
        }
        copied_ += n;
    }
    if (copied_ == total_) reader_.finish();
    return copied_ == total_;
}

}  // namespace slabcast
