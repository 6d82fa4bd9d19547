#include "mover/journal.h"

#include "mover/dest_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace slabcast::mover {

Journal::Journal(DestTree& tree, const std::string& prefix)
    : tree_(tree), name_(prefix.empty() ? kName : prefix + "/" + kName) {
    fd_ = tree_.open_file(name_, O_RDWR | O_CREAT | O_APPEND, 0600);
    if (fd_ < 0) throw std::runtime_error(tree_.root() + "/" + name_ + ": " + std::strerror(errno));
}

Journal::~Journal() {
    if (fd_ >= 0) ::close(fd_);
}

std::map<std::string, Journal::Partial> Journal::load() const {
    std::string text;
    char buf[65536];
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        at += n;
    }
    std::map<std::string, Partial> out;
    std::istringstream lines(text);
    std::string line;
    // "B SIZE MTIME BLOCK OFFSET CHECKSUM PATH" (checksum in hex); a torn last line is skipped.
    while (std::getline(lines, line)) {
        if (lines.eof()) break;  // no newline: the write was cut short (a torn path could name another file)
        std::istringstream f(line);
        std::string tag, path;
        Partial p;
        std::uint64_t offset = 0, sum = 0;
        if (!(f >> tag >> p.size >> p.mtime_ns >> p.block >> offset >> std::hex >> sum) || tag != "B" ||
            f.get() != ' ' || !std::getline(f, path))
            continue;
        Partial& known = out[path];
        if (known.size != p.size || known.mtime_ns != p.mtime_ns || known.block != p.block)
            known = Partial{p.size, p.mtime_ns, p.block, {}};  // a later run over another version: it counts
        known.blocks[offset] = sum;
    }
    return out;
}

void Journal::block_written(const std::string& path, std::uint64_t size, std::int64_t mtime_ns, std::uint32_t block,
                            std::uint64_t offset, std::uint64_t checksum) {
    char sum[17];
    std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(checksum));
    const std::string line = "B " + std::to_string(size) + " " + std::to_string(mtime_ns) + " " + std::to_string(block) +
                             " " + std::to_string(offset) + " " + sum + " " + path + "\n";
    std::lock_guard lock(mutex_);
    // One write per line with O_APPEND: a kill leaves whole lines, at worst a torn last one.
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        throw std::runtime_error(tree_.root() + "/" + name_ + ": cannot append: " + std::strerror(errno));
}

void Journal::remove() {
    const auto [parent, name] = split_path(name_);
    ::unlinkat(tree_.parent_fd(name_), name.c_str(), 0);
}

}  // namespace slabcast::mover
