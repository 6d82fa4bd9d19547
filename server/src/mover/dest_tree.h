// The receiving side's view of its destination directory: every open goes
// through openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) from the root's
// descriptor, so no name in a manifest, and no symbolic link planted in the
// destination, can lead a write outside it.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>

namespace slabcast::mover {

class DestTree {
public:
    // Creates the root directory if it is missing.
    explicit DestTree(const std::string& root);
    ~DestTree();
    DestTree(const DestTree&) = delete;
    DestTree& operator=(const DestTree&) = delete;

    const std::string& root() const { return root_; }
    // Creates the directory (its parent must exist) or checks it is one.
    void make_dir(const std::string& rel, mode_t mode);
    // The directory holding `rel`, opened (and cached) beneath the root.
    int parent_fd(const std::string& rel);
    // Opens a file beneath the root; -1 with errno set when it cannot.
    int open_file(const std::string& rel, int flags, mode_t mode = 0600);

private:
    int open_beneath(const std::string& rel, int flags, mode_t mode);

    std::string root_;
    int root_fd_ = -1;
    std::mutex mutex_;
    std::map<std::string, int> dirs_;
};

// "a/b/name" -> ("a/b", "name"); ("", "name") at the top.
std::pair<std::string, std::string> split_path(const std::string& rel);

}  // namespace slabcast::mover
