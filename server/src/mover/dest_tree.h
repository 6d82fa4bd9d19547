// The receiving side's view of its destination directory (and a pull's view
// of the served tree): every open goes through openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS) from the root's descriptor, so no name in a manifest
// or a request, and no symbolic link planted in the tree, can lead a read or
// a write outside it; what is done to a file or directory afterwards
// (fchmod, futimens, renameat beneath its directory) goes through descriptors.
#pragma once

#include "slabcast/unique_fd.h"

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace slabcast::mover {

class DestTree {
public:
    // A directory beneath the root, held open while someone uses it (the
    // cache may drop it meanwhile: it closes when its last user lets go).
    using Dir = std::shared_ptr<const UniqueFd>;
    // Directories kept open by the cache at most: a manifest of 100,000
    // directories must not hold 100,000 descriptors.
    static constexpr std::size_t kCachedDirs = 64;

    // Creates the root directory if it is missing.
    explicit DestTree(const std::string& root);
    DestTree(const DestTree&) = delete;
    DestTree& operator=(const DestTree&) = delete;

    const std::string& root() const { return root_; }
    // Creates the directory (its parent must exist) or checks it is one.
    void make_dir(const std::string& rel, mode_t mode);
    // The directory `rel` ("" for the root), opened beneath the root; throws naming it.
    Dir dir(const std::string& rel);
    // The same, or nullptr when it does not exist (yet).
    Dir dir_if_exists(const std::string& rel);
    // The directory holding `rel`.
    Dir parent(const std::string& rel);
    // Opens a regular file beneath the root (never a FIFO, a device or a
    // directory); throws naming it and why.
    UniqueFd open_file(const std::string& rel, int flags, mode_t mode = 0600);
    // Opens a directory beneath the root, not cached (to change its mode);
    // holds nothing, with errno set, when it cannot.
    UniqueFd open_dir(const std::string& rel);

private:
    int open_beneath(const std::string& rel, int flags, mode_t mode);
    Dir dir(const std::string& rel, bool must_exist);

    std::string root_;
    Dir root_fd_;
    std::mutex mutex_;
    std::map<std::string, Dir> dirs_;
};

// "a/b/name" -> ("a/b", "name"); ("", "name") at the top.
std::pair<std::string, std::string> split_path(const std::string& rel);

}  // namespace slabcast::mover
