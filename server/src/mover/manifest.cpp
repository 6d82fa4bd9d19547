#include "mover/manifest.h"

#include "mover/peer_text.h"
#include "slabcast/json_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace slabcast::mover {
namespace fs = std::filesystem;
using nlohmann::json;

std::uint64_t Manifest::total_bytes() const {
    std::uint64_t n = 0;
    for (const auto& f : files) n += f.size;
    return n;
}

namespace {

std::int64_t mtime_ns_of(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

struct stat lstat_or_throw(const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) throw std::runtime_error(p.string() + ": " + std::strerror(errno));
    return st;
}

// One entry of a scan: `st` from lstat, `source` where the sender reads it.
void add_entry(Manifest& m, const std::string& source, const std::string& rel, const struct stat& st,
               std::vector<std::pair<std::string, std::string>>* subdirs) {
    if (S_ISDIR(st.st_mode)) {
        m.dirs.push_back(ManifestDir{rel, static_cast<std::uint32_t>(st.st_mode & 07777)});
        if (subdirs) subdirs->emplace_back(source, rel);
    } else if (S_ISREG(st.st_mode)) {
        m.files.push_back(ManifestFile{rel, static_cast<std::uint64_t>(st.st_size),
                                       static_cast<std::uint32_t>(st.st_mode & 07777), mtime_ns_of(st), source});
    } else {
        m.skipped.push_back(source + (S_ISLNK(st.st_mode) ? ": a symbolic link" : ": not a regular file"));
    }
}

void check_readable(int dir_fd, const char* name, const std::string& source) {
    if (::faccessat(dir_fd, name, R_OK, 0) != 0)
        throw std::runtime_error(source + ": cannot read: " + std::strerror(errno));
}

// Directory `top` (listed as `name`, with `top_mode`'s permission bits) and
// everything in it, depth first, each directory before what is in it, one
// directory open at a time however deep the tree. `open_dir(path)` opens one
// (invalid: errno says why). Each entry is looked at relative to its
// directory, without following a link, by `look(dir_fd, entry, source, st)`,
// which fills `st` and returns false to leave the entry out: a path lookup
// per directory, not per file (ten thousand files took 80 ms by full paths,
// a third of the time to connect and send the manifest on a 32 ms path).
template <typename OpenDir, typename Look>
void add_tree(Manifest& m, const std::string& top, const std::string& name, mode_t top_mode, OpenDir open_dir,
              Look look) {
    m.dirs.push_back(ManifestDir{name, static_cast<std::uint32_t>(top_mode & 07777)});
    std::vector<std::pair<std::string, std::string>> todo{{top, name}};  // (source, name in the manifest)
    while (!todo.empty()) {
        const auto [dir_path, as] = todo.back();
        todo.pop_back();
        UniqueFd fd = open_dir(dir_path);
        if (!fd.valid()) throw std::runtime_error(dir_path + ": " + std::strerror(errno));
        // The stream owns the descriptor once fdopendir has it, and closes both.
        const std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd.get()), &::closedir);
        if (!dir) throw std::runtime_error(dir_path + ": " + std::strerror(errno));
        const int dir_fd = fd.release();
        std::vector<std::pair<std::string, std::string>> subdirs;
        for (;;) {
            errno = 0;
            const dirent* e = ::readdir(dir.get());
            if (!e) {
                if (errno != 0) throw std::runtime_error(dir_path + ": " + std::strerror(errno));
                break;
            }
            if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
            const std::string source = dir_path + "/" + e->d_name;
            struct stat st {};
            if (look(dir_fd, e->d_name, source, st)) add_entry(m, source, as + "/" + e->d_name, st, &subdirs);
        }
        todo.insert(todo.end(), subdirs.rbegin(), subdirs.rend());
    }
}

}  // namespace

Manifest scan_sources(const std::vector<std::string>& sources, std::uint32_t block) {
    Manifest m;
    m.block = block;
    std::map<std::string, std::string> names;  // top-level name -> source
    for (const std::string& s : sources) {
        fs::path p(s);
        const std::string name = fs::path(s).lexically_normal().filename().string().empty()
                                     ? p.lexically_normal().parent_path().filename().string()
                                     : p.lexically_normal().filename().string();
        if (name.empty() || name == "." || name == "..")
            throw std::runtime_error(s + ": name a file or directory (it goes under its own name)");
        if (auto [it, fresh] = names.emplace(name, s); !fresh)
            throw std::runtime_error("name collision: " + it->second + " and " + s + " would both be '" + name + "'");
        const struct stat st = lstat_or_throw(p);
        if (S_ISDIR(st.st_mode)) {
            const auto open_dir = [](const std::string& path) {
                return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            };
            add_tree(m, p.string(), name, st.st_mode, open_dir,
                     [](int dir_fd, const char* entry, const std::string& source, struct stat& found) {
                         if (::fstatat(dir_fd, entry, &found, AT_SYMLINK_NOFOLLOW) != 0)
                             throw std::runtime_error(source + ": " + std::strerror(errno));
                         if (S_ISREG(found.st_mode)) check_readable(dir_fd, entry, source);
                         return true;
                     });
        } else if (S_ISREG(st.st_mode)) {
            check_readable(AT_FDCWD, p.c_str(), p.string());
            add_entry(m, p.string(), name, st, nullptr);
        } else {
            throw std::runtime_error(s + ": not a regular file or directory");
        }
    }
    return m;
}

Manifest scan_beneath(std::shared_ptr<DestTree> tree, const std::vector<std::string>& paths, std::uint32_t block,
                      std::uint64_t max_entries) {
    Manifest m;
    m.block = block;
    m.beneath = tree;
    std::map<std::string, std::string> names;  // top-level name -> path
    for (const std::string& rel : paths) {
        check_relative_path(rel);
        const auto [parent, name] = split_path(rel);
        if (auto [it, fresh] = names.emplace(name, rel); !fresh)
            throw std::runtime_error("name collision: " + it->second + " and " + rel + " would both be '" + name + "'");
        struct stat st {};
        if (::fstatat(tree->dir(parent)->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            throw std::runtime_error(rel + ": " + std::strerror(errno));
        if (S_ISDIR(st.st_mode)) {
            // Listed through descriptors opened beneath the root, so a link
            // swapped in leads nowhere; an entry gone meanwhile is left out.
            add_tree(m, rel, name, st.st_mode, [&](const std::string& path) { return tree->open_dir(path); },
                     [&](int dir_fd, const char* entry, const std::string&, struct stat& found) {
                         if (m.files.size() + m.dirs.size() >= max_entries)
                             throw std::runtime_error(rel + ": more than " + std::to_string(max_entries) +
                                                      " files and directories to give out (serve --max-files)");
                         return ::fstatat(dir_fd, entry, &found, AT_SYMLINK_NOFOLLOW) == 0;
                     });
        } else if (S_ISREG(st.st_mode)) {
            m.files.push_back(ManifestFile{name, static_cast<std::uint64_t>(st.st_size),
                                           static_cast<std::uint32_t>(st.st_mode & 07777), mtime_ns_of(st), rel});
        } else {
            throw std::runtime_error(rel + (S_ISLNK(st.st_mode) ? ": a symbolic link, not followed"
                                                               : ": not a regular file or directory"));
        }
    }
    return m;
}

UniqueFd Manifest::open_source(const ManifestFile& f) const {
    if (beneath) return beneath->open_file(f.source, O_RDONLY);
    UniqueFd fd(::open(f.source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) throw std::runtime_error(std::string("cannot open: ") + std::strerror(errno));
    return fd;
}

std::string to_json(const Manifest& m) {
    // Written entry by entry, not built as a JSON document and then dumped:
    // a fifth of the time for ten thousand files, on the way to the first
    // byte sent. Each path is quoted as the JSON library quotes it.
    std::string out = "{\"block\":" + std::to_string(m.block) + ",\"dirs\":[";
    out.reserve(64 * (m.dirs.size() + m.files.size()));
    const auto quoted = [&](const std::string& path) { out += json(path).dump(); };
    for (std::size_t i = 0; i < m.dirs.size(); ++i) {
        out += i ? ",{\"path\":" : "{\"path\":";
        quoted(m.dirs[i].path);
        out += ",\"mode\":" + std::to_string(m.dirs[i].mode) + "}";
    }
    out += "],\"files\":[";
    for (std::size_t i = 0; i < m.files.size(); ++i) {
        const ManifestFile& f = m.files[i];
        out += i ? ",{\"path\":" : "{\"path\":";
        quoted(f.path);
        out += ",\"size\":" + std::to_string(f.size) + ",\"mode\":" + std::to_string(f.mode) +
               ",\"mtime_ns\":" + std::to_string(f.mtime_ns) + "}";
    }
    out += "]}";
    return out;
}

void check_relative_path(const std::string& path) {
    // The path may be a peer's, control characters and all: named only as printable text.
    auto bad = [&](const std::string& why) { throw std::runtime_error("path '" + printable(path) + "': " + why); };
    if (path.empty()) bad("empty");
    if (path.size() > 4096) bad("longer than 4096 bytes");
    if (path.front() == '/') bad("absolute");
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        const std::string_view part = std::string_view(path).substr(start, end - start);
        if (part.empty()) bad("an empty component");
        if (part == "." || part == "..") bad("a '" + std::string(part) + "' component");
        if (part.size() > 255) bad("a component longer than 255 bytes");
        for (unsigned char c : part)
            if (c < 0x20 || c == 0x7f) bad("a control character");
        start = end + 1;
    }
}

Manifest manifest_from_json(const std::string& text) {
    Manifest m;
    // path -> 'd' or 'f', viewing the manifest's own strings (filled in below, and
    // not moved after): hashed, not compared along their common prefixes.
    std::unordered_map<std::string_view, char> kinds;
    // Every field by name and type: this is what any client reaching the
    // server's port sends (json_file::field turns 1e300 or "x" into an error
    // naming the field, never a cast).
    using json_file::field;
    const std::string what = "malformed manifest";
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw std::runtime_error(what + ": " + e.what());
    }
    m.block = field<std::uint32_t>(j, "block", what);
    if (m.block < 4096 || m.block > (64u << 20) || m.block % 4096 != 0)
        throw std::runtime_error("block size " + std::to_string(m.block) + " is not 4 KiB..64 MiB in pages");
    const auto list = [&](const char* key) -> const json& {
        if (!j.contains(key) || !j.at(key).is_array()) throw std::runtime_error(what + ": '" + key + "' must be a list");
        return j.at(key);
    };
    const std::string dir_entry = what + " (a directory)", file_entry = what + " (a file)";
    for (const auto& d : list("dirs"))
        m.dirs.push_back(ManifestDir{field<std::string>(d, "path", dir_entry),
                                     field<std::uint32_t>(d, "mode", dir_entry) & 07777});
    std::uint64_t total = 0;
    for (const auto& f : list("files")) {
        ManifestFile file;
        file.path = field<std::string>(f, "path", file_entry);
        file.size = field<std::uint64_t>(f, "size", file_entry);
        file.mode = field<std::uint32_t>(f, "mode", file_entry) & 07777;
        file.mtime_ns = field<std::int64_t>(f, "mtime_ns", file_entry);
        // A size near 2^64 once wrapped the block count to 0, and a block of
        // that file then indexed the per-block state at an offset the client chose.
        if (file.size > kMaxFileSize)
            throw std::runtime_error(file_entry + ": field 'size' is " + std::to_string(file.size) +
                                     ", above 2^63-1, the largest file there can be");
        if (__builtin_add_overflow(total, file.size, &total))
            throw std::runtime_error("malformed manifest: the files' sizes add up to more than 2^64 bytes");
        m.files.push_back(file);
    }
    auto claim = [&](const std::string& path, char kind) {
        check_relative_path(path);
        if (!kinds.emplace(path, kind).second) throw std::runtime_error("name collision: '" + path + "' listed twice");
        // Every parent must be a listed directory, so no file hides a directory's name.
        const auto slash = path.rfind('/');
        if (slash != std::string::npos) {
            const auto parent = kinds.find(std::string_view(path).substr(0, slash));
            if (parent == kinds.end() || parent->second != 'd')
                throw std::runtime_error("path '" + path + "': its directory is not listed before it");
        }
    };
    kinds.reserve(m.dirs.size() + m.files.size());
    for (const auto& d : m.dirs) claim(d.path, 'd');
    for (const auto& f : m.files) claim(f.path, 'f');
    return m;
}

}  // namespace slabcast::mover
