#include "slabcast/reader_pins.h"

#include "slabcast/publication.h"
#include "slabcast/slab_file.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace slabcast {
namespace {

std::vector<int> numeric_entries(const std::string& dir) {
    std::vector<int> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
        char* end = nullptr;
        const long n = std::strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && n >= 0 && n <= INT32_MAX) out.push_back(static_cast<int>(n));
    }
    ::closedir(d);
    return out;
}

std::string link_target(const std::string& path) {
    char buf[4096];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string command_of(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
    std::string c;
    std::getline(f, c);
    return c;
}

}  // namespace

std::vector<int> pinned_buffers_of(const std::string& line) {
    // "lock:\t1: OFDLCK ADVISORY  READ -1 00:1b:2 2049 2050"
    std::istringstream in(line);
    std::string tag, index, kind, advisory, mode, pid, file, start, end;
    if (!(in >> tag >> index >> kind >> advisory >> mode >> pid >> file >> start >> end)) return {};
    if (tag != "lock:" || kind != "OFDLCK" || mode != "READ") return {};
    const auto number = [](const std::string& text) {
        char* stop = nullptr;
        const long long n = std::strtoll(text.c_str(), &stop, 10);
        return *stop == '\0' && !text.empty() ? n : -1;
    };
    const long long from = number(start), to = number(end);
    // A pin range lies within the pin bytes; a lock past them ("EOF", or a
    // range a pin never takes) is someone else's.
    if (from < kPinLockOffset || to < from || to >= kPinLockOffset + kMaxBuffers) return {};
    std::vector<int> buffers;
    for (long long at = from; at <= to; ++at) buffers.push_back(static_cast<int>(at - kPinLockOffset));
    return buffers;
}

std::map<std::string, std::vector<ReaderPins>> readers_pinning(const std::vector<std::string>& slab_paths) {
    std::map<std::string, std::vector<ReaderPins>> out;
    // A descriptor's fd links to the file's absolute, resolved path.
    std::map<std::string, std::string> wanted;  // resolved -> as given
    for (const std::string& p : slab_paths) {
        char resolved[PATH_MAX];
        wanted[::realpath(p.c_str(), resolved) ? std::string(resolved) : p] = p;
    }
    for (int pid : numeric_entries("/proc")) {
        const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
        std::map<std::string, std::set<int>> mine;  // slab path -> buffers this process pins
        for (int fd : numeric_entries(fds)) {
            const auto target = wanted.find(link_target(fds + "/" + std::to_string(fd)));
            if (target == wanted.end()) continue;
            std::ifstream info("/proc/" + std::to_string(pid) + "/fdinfo/" + std::to_string(fd));
            auto& buffers = mine[target->second];
            for (std::string line; std::getline(info, line);)
                for (int b : pinned_buffers_of(line)) buffers.insert(b);
        }
        for (const auto& [path, buffers] : mine)
            if (!buffers.empty())
                out[path].push_back(ReaderPins{pid, command_of(pid), std::vector<int>(buffers.begin(), buffers.end())});
    }
    return out;
}

std::string readers_text(const std::vector<ReaderPins>& readers, const std::vector<long long>& step_of) {
    std::string text;
    for (const ReaderPins& r : readers) {
        std::vector<long long> steps;
        for (int b : r.buffers)
            if (b >= 0 && static_cast<std::size_t>(b) < step_of.size() && step_of[static_cast<std::size_t>(b)] >= 0)
                steps.push_back(step_of[static_cast<std::size_t>(b)]);
        std::sort(steps.begin(), steps.end());
        std::string list;
        for (long long s : steps) list += (list.empty() ? "" : ", ") + std::to_string(s);
        text += (text.empty() ? "" : ", ") + r.command + "[" + std::to_string(r.pid) + "] " +
                std::to_string(r.buffers.size()) +
                (steps.empty() ? "" : (steps.size() == 1 ? " (step " : " (steps ") + list + ")");
    }
    return text.empty() ? "no reader this process can see" : text;
}

std::map<std::string, std::string> readers_of(const std::vector<const SlabMapping*>& slabs) {
    std::vector<std::string> paths;
    for (const SlabMapping* m : slabs) paths.push_back(m->path());
    const auto readers = readers_pinning(paths);
    std::map<std::string, std::string> out;
    for (const SlabMapping* m : slabs) {
        std::vector<long long> step_of(static_cast<std::size_t>(m->buffers()), -1);
        for (int b = 0; b < m->buffers(); ++b)
            if (auto p = read_publication(*m, b)) step_of[static_cast<std::size_t>(b)] = p->step;
        const auto found = readers.find(m->path());
        out[m->path()] = readers_text(found == readers.end() ? std::vector<ReaderPins>{} : found->second, step_of);
    }
    return out;
}

}  // namespace slabcast
