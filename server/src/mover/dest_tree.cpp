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
    const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(root + ": " + std::strerror(errno));
    root_fd_ = std::make_shared<const UniqueFd>(fd);
}

int DestTree::open_beneath(const std::string& rel, int flags, mode_t mode) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(::syscall(SYS_openat2, root_fd_->get(), rel.c_str(), &how, sizeof how));
}

void DestTree::make_dir(const std::string& rel, mode_t mode) {
    const auto name = split_path(rel).second;
    const Dir dir = parent(rel);
    if (::mkdirat(dir->get(), name.c_str(), mode | 0700) != 0 && errno != EEXIST)
        throw std::runtime_error(root_ + "/" + rel + ": cannot create: " + std::strerror(errno));
    struct stat st {};
    if (::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        throw std::runtime_error(root_ + "/" + rel + ": exists and is not a directory (name collision)");
}

DestTree::Dir DestTree::dir(const std::string& rel, bool must_exist) {
    if (rel.empty()) return root_fd_;
    std::lock_guard lock(mutex_);
    if (auto it = dirs_.find(rel); it != dirs_.end()) return it->second;
    const int fd = open_beneath(rel, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) {
        if (!must_exist && errno == ENOENT) return nullptr;
        throw std::runtime_error(root_ + "/" + rel + ": cannot open beneath the destination: " + std::strerror(errno));
    }
    // Full: start again rather than keep a descriptor per directory; a
    // handle still in use stays open until its user lets go of it.
    if (dirs_.size() >= kCachedDirs) dirs_.clear();
    return dirs_[rel] = std::make_shared<const UniqueFd>(fd);
}

DestTree::Dir DestTree::dir(const std::string& rel) { return dir(rel, true); }
DestTree::Dir DestTree::dir_if_exists(const std::string& rel) { return dir(rel, false); }
DestTree::Dir DestTree::parent(const std::string& rel) { return dir(split_path(rel).first, true); }

UniqueFd DestTree::open_file(const std::string& rel, int flags, mode_t mode) {
    // O_NONBLOCK: opening a FIFO planted under the name must not wait for a
    // writer; it is refused below (for a regular file the flag means nothing).
    UniqueFd fd(open_beneath(rel, flags | O_NONBLOCK, mode));
    if (fd.get() < 0) throw std::runtime_error(root_ + "/" + rel + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        throw std::runtime_error(root_ + "/" + rel + ": not a regular file");
    return fd;
}

UniqueFd DestTree::open_dir(const std::string& rel) {
    return UniqueFd(open_beneath(rel, O_RDONLY | O_DIRECTORY, 0));
}

}  // namespace slabcast::mover
