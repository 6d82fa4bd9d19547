// Resume bookkeeping of one destination: the blocks of unfinished files that
// are already written, with their checksums (the file's checksum is made of
// them), one appended line per block. A killed transfer leaves
// the journal and the partial files; the next one with the same files (size
// and time unchanged) sends only the blocks that are missing. Removed once a
// transfer ends with every file in place.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace slabcast::mover {

class DestTree;

class Journal {
public:
    static constexpr const char* kName = ".slabcast-move.journal";

    struct Partial {
        std::uint64_t size = 0;
        std::int64_t mtime_ns = 0;
        std::uint32_t block = 0;  // block size of the transfer that wrote them
        std::map<std::uint64_t, std::uint64_t> blocks;  // offset -> the block's checksum
    };

    // Opens (creating) the journal at the top of the tree; `prefix` is the
    // transfer's destination inside it.
    Journal(DestTree& tree, const std::string& prefix);
    ~Journal();
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    // Blocks written, by file path (as in the manifest), as of the last runs.
    std::map<std::string, Partial> load() const;
    void block_written(const std::string& path, std::uint64_t size, std::int64_t mtime_ns, std::uint32_t block,
                       std::uint64_t offset, std::uint64_t checksum);
    void remove();

private:
    DestTree& tree_;
    std::string name_;
    int fd_ = -1;
    std::mutex mutex_;
};

}  // namespace slabcast::mover
