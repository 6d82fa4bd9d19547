#include "mover/dest_tree.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast::mover {

std::pair<std::string, std::string> split_path(const std::string& rel) {
    const auto slash = rel.rfind('/');
    if (slash == std::string::npos) return {"", rel};
    return {rel.substr(0, slash), rel.substr(slash + 1)};
}

DestTree::DestTree(const std::string& root) : root_(root) {
    if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST)
        throw std::runtime_error(root + ": cannot create: " + std::strerror(errno));
    root_fd_ = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd_ < 0) throw std::runtime_error(root + ": " + std::strerror(errno));
}

DestTree::~DestTree() {
    for (auto& [path, fd] : dirs_) ::close(fd);
    if (root_fd_ >= 0) ::close(root_fd_);
}

int DestTree::open_beneath(const std::string& rel, int flags, mode_t mode) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(::syscall(SYS_openat2, root_fd_, rel.c_str(), &how, sizeof how));
}

void DestTree::make_dir(const std::string& rel, mode_t mode) {
    const auto [parent, name] = split_path(rel);
    const int dir = parent_fd(rel);
    if (::mkdirat(dir, name.c_str(), mode | 0700) != 0 && errno != EEXIST)
        throw std::runtime_error(root_ + "/" + rel + ": cannot create: " + std::strerror(errno));
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        throw std::runtime_error(root_ + "/" + rel + ": exists and is not a directory (name collision)");
}

int DestTree::parent_fd(const std::string& rel) {
    const std::string parent = split_path(rel).first;
    if (parent.empty()) return root_fd_;
    std::lock_guard lock(mutex_);
    if (auto it = dirs_.find(parent); it != dirs_.end()) return it->second;
    const int fd = open_beneath(parent, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        throw std::runtime_error(root_ + "/" + parent + ": cannot open beneath the destination: " +
                                 std::strerror(errno));
    dirs_[parent] = fd;
    return fd;
}

int DestTree::open_file(const std::string& rel, int flags, mode_t mode) { return open_beneath(rel, flags, mode); }

}  // namespace slabcast::mover
