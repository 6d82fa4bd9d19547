#include "mover/journal.h"

#include "mover/dest_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace slabcast::mover {
namespace {

std::string journal_path(const std::string& prefix) {
    return prefix.empty() ? Journal::kName : prefix + "/" + Journal::kName;
}

// The next space-separated field of `line`, parsed whole as T (base 10, or
// 16), or false: "-1" is not a size, nor "12x" an offset.
template <typename T>
bool take(std::string_view& line, T& out, int base = 10) {
    const auto space = line.find(' ');
    if (space == std::string_view::npos) return false;
    const char* end = line.data() + space;
    const auto [stop, ec] = std::from_chars(line.data(), end, out, base);
    if (ec != std::errc() || stop != end || space == 0) return false;
    line.remove_prefix(space + 1);
    return true;
}

// Longer than any line the journal writes (a path is at most 4096 bytes).
constexpr std::size_t kMaxLine = 8192;

}  // namespace

std::map<std::string, Journal::Partial> Journal::read(DestTree& tree, const std::string& prefix,
                                                      const Wanted& wanted) {
    std::map<std::string, Partial> out;
    if (!tree.dir_if_exists(prefix)) return out;
    UniqueFd fd;
    try {
        fd = tree.open_file(journal_path(prefix), O_RDONLY);
    } catch (const std::runtime_error&) {
        return out;  // none (or not a file): nothing to resume
    }
    // "B SIZE MTIME BLOCK OFFSET CHECKSUM PATH\n" (checksum in hex); a torn last line is skipped.
    auto take_line = [&](std::string_view line) {
        std::string_view tag = line.substr(0, 2);
        if (tag != "B ") return;
        line.remove_prefix(2);
        Version v;
        std::uint64_t offset = 0, sum = 0;
        if (!take(line, v.size) || !take(line, v.mtime_ns) || !take(line, v.block) || !take(line, offset) ||
            !take(line, sum, 16) || line.empty() || v.block == 0)
            return;
        const std::string path(line);
        const Version* want = wanted(path);
        if (!want) return;
        auto known = out.find(path);
        if (!(*want == v)) {  // a later run over another version: what came before no longer counts
            if (known != out.end()) out.erase(known);
            return;
        }
        if (offset % v.block != 0 || offset >= v.size) return;  // not a block of this file
        if (known == out.end()) known = out.emplace(path, Partial{v, {}}).first;
        known->second.blocks[offset] = sum;
    };
    std::string pending;  // the line being read
    bool skipping = false;  // the line is too long to be one
    char buf[65536];
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(fd.get(), buf, sizeof buf, at);
        if (n <= 0) break;
        at += n;
        for (std::string_view rest(buf, static_cast<std::size_t>(n)); !rest.empty();) {
            const auto newline = rest.find('\n');
            const std::string_view piece = rest.substr(0, newline);
            if (!skipping) pending.append(piece);
            if (pending.size() > kMaxLine) {
                skipping = true;
                pending.clear();
            }
            if (newline == std::string_view::npos) break;
            if (!skipping) take_line(pending);
            pending.clear();
            skipping = false;
            rest.remove_prefix(newline + 1);
        }
    }
    return out;  // what is left in `pending` had no newline: the write was cut short
}

Journal::Journal(DestTree& tree, const std::string& prefix)
    : tree_(tree), name_(journal_path(prefix)), fd_(tree_.open_file(name_, O_RDWR | O_CREAT | O_APPEND, 0600)) {}

void Journal::block_written(const std::string& path, const Version& v, std::uint64_t offset, std::uint64_t checksum) {
    char sum[17];
    std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(checksum));
    const std::string line = "B " + std::to_string(v.size) + " " + std::to_string(v.mtime_ns) + " " +
                             std::to_string(v.block) + " " + std::to_string(offset) + " " + sum + " " + path + "\n";
    std::lock_guard lock(mutex_);
    // One write per line with O_APPEND: a kill leaves whole lines, at worst a torn last one.
    if (::write(fd_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        throw std::runtime_error(tree_.root() + "/" + name_ + ": cannot append: " + std::strerror(errno));
}

void Journal::remove() {
    const auto name = split_path(name_).second;
    ::unlinkat(tree_.parent(name_)->get(), name.c_str(), 0);
}

}  // namespace slabcast::mover
