// What a transfer moves: directories and regular files with relative paths,
// sizes, modes and times. Built by scanning the sources on the sending side,
// sent as blocks, checked on the receiving side before anything is written.
#pragma once

#include "mover/dest_tree.h"
#include "slabcast/unique_fd.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace slabcast::mover {

struct ManifestFile {
    std::string path;  // relative, '/'-separated
    std::uint64_t size = 0;
    std::uint32_t mode = 0644;
    std::int64_t mtime_ns = 0;
    std::string source;  // where the sender reads it (not sent)
};

struct ManifestDir {
    std::string path;
    std::uint32_t mode = 0755;
};

struct Manifest {
    std::uint32_t block = 4u << 20;
    std::vector<ManifestDir> dirs;  // parents before children
    std::vector<ManifestFile> files;
    std::vector<std::string> skipped;  // sender side: symlinks and special files left out, with why
    // Sender side: the tree the sources lie beneath (a pull's, see
    // scan_beneath), or none: each source is a path of its own.
    std::shared_ptr<DestTree> beneath;
    // Opens a file's source to read it; throws naming why it cannot.
    UniqueFd open_source(const ManifestFile& f) const;
    // The sum of the sizes; manifest_from_json refuses a manifest whose sum
    // does not fit 64 bits, so it cannot wrap.
    std::uint64_t total_bytes() const;
};

// The largest size a file can have (off_t): a manifest declaring more is refused.
inline constexpr std::uint64_t kMaxFileSize = (std::uint64_t{1} << 63) - 1;

// Blocks of `block` bytes that hold `size` bytes, without the wrap of
// (size + block - 1) / block for sizes near 2^64.
inline std::uint64_t blocks_of(std::uint64_t size, std::uint32_t block) {
    return size / block + (size % block != 0);
}

// Each source (file or directory) goes under its own name, as `cp -r` would.
// Throws std::runtime_error naming the path that cannot be read.
Manifest scan_sources(const std::vector<std::string>& sources, std::uint32_t block);
// The same for paths beneath a tree a server gives out (`serve
// --allow-pull`): every directory is listed, and every file later read,
// through descriptors opened beneath its root with no symbolic link on the
// way, so a link swapped in between the listing and the read leads nowhere.
// Each path must pass check_relative_path. Throws, naming the limit, when the
// listing passes `max_entries` files and directories.
Manifest scan_beneath(std::shared_ptr<DestTree> tree, const std::vector<std::string>& paths, std::uint32_t block,
                      std::uint64_t max_entries);

std::string to_json(const Manifest& m);
// Throws std::runtime_error for a malformed manifest, a path that could leave
// the destination (absolute, "..", empty or control characters), two
// entries with one name, a size above kMaxFileSize, or sizes whose sum
// does not fit 64 bits. (What a receiving host can afford, files, blocks and
// space, is ReceiveTransfer's to check: docs/mover.md, "Limits".)
Manifest manifest_from_json(const std::string& text);

// The checks manifest_from_json applies to each path.
void check_relative_path(const std::string& path);

}  // namespace slabcast::mover
