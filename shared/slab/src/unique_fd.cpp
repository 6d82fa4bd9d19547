#include "slabcast/unique_fd.h"

#include <unistd.h>

namespace slabcast {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
}

UniqueFd::~UniqueFd() { reset(); }

int UniqueFd::release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
}

void UniqueFd::reset(int fd) {
    // close() is not retried on EINTR: on Linux the descriptor is released
    // whatever it returns, and a second close could hit a descriptor another
    // thread has just been given.
    if (fd_ >= 0 && fd_ != fd) ::close(fd_);
    fd_ = fd;
}

}  // namespace slabcast
