// The one owner of a file descriptor (a file, a directory, a socket): closes
// it exactly once, on destruction or reset, however the scope is left. Every
// descriptor slabcast opens and keeps past one statement is held by one, so
// an early return or an exception can neither leak it nor close it twice.
#pragma once

namespace slabcast {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}  // takes `fd` over; -1 (a failed open) holds nothing
    UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept;
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd();

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    // Hands the descriptor to the caller, who closes it; this holds nothing after.
    [[nodiscard]] int release();
    // Closes what it held and takes `fd` over.
    void reset(int fd = -1);

private:
    int fd_ = -1;
};

}  // namespace slabcast
