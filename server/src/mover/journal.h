// Resume bookkeeping of one destination: the blocks of unfinished files that
// are already written, with their checksums (the file's checksum is made of
// them), one appended line per block (of files of more than one block). A killed transfer leaves
// the journal and the partial files; the next one with the same files (size
// and time unchanged) sends only the blocks that are missing. Removed once a
// transfer ends with every file in place.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "slabcast/unique_fd.h"

namespace slabcast::mover {

class DestTree;

class Journal {
public:
    static constexpr const char* kName = ".slabcast-move.journal";

    struct Version {
        std::uint64_t size = 0;
        std::int64_t mtime_ns = 0;
        std::uint32_t block = 0;  // block size of the transfer that wrote them
        bool operator==(const Version& o) const {
            return size == o.size && mtime_ns == o.mtime_ns && block == o.block;
        }
    };
    struct Partial {
        Version version;
        std::map<std::uint64_t, std::uint64_t> blocks;  // offset -> the block's checksum
    };
    // The version of `path` a transfer is about to write, or nullptr for a file it does not hold.
    using Wanted = std::function<const Version*(const std::string& path)>;

    // Blocks already written of the files a transfer holds, by path (as in
    // the manifest), as the last run over each file's version left them,
    // from the journal in directory `prefix` of the tree (none if it is not
    // there). The journal is read as a hostile file: numbers are parsed
    // strictly, a line that is not one is skipped, a block must lie inside
    // its file, and only wanted files are kept, so no journal of any size or
    // content costs more memory than the transfer's own blocks.
    static std::map<std::string, Partial> read(DestTree& tree, const std::string& prefix, const Wanted& wanted);

    // Opens (creating) the journal in directory `prefix` of the tree.
    Journal(DestTree& tree, const std::string& prefix);
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    void block_written(const std::string& path, const Version& version, std::uint64_t offset, std::uint64_t checksum);
    void remove();

private:
    DestTree& tree_;
    std::string name_;
    UniqueFd fd_;
    std::mutex mutex_;
};

}  // namespace slabcast::mover
