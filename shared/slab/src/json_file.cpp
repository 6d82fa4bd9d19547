#include "slabcast/json_file.h"

#include "slabcast/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace slabcast::json_file {

std::string read_text(const std::string& path) {
    // O_NONBLOCK: a FIFO planted under the name must not hang the reader (a
    // ParaView session opening a descriptor, a role its dataset).
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd.valid()) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    std::string problem;
    if (::fstat(fd.get(), &st) != 0) problem = std::string("cannot stat: ") + std::strerror(errno);
    else if (!S_ISREG(st.st_mode)) problem = "not a regular file";
    else if (static_cast<std::uint64_t>(st.st_size) > kMaxTextBytes)
        problem = std::to_string(st.st_size) + " bytes, more than the " + std::to_string(kMaxTextBytes >> 20) +
                  " MiB a slabcast JSON file may have";
    std::string text;
    if (problem.empty()) {
        char buf[65536];
        for (;;) {
            const ssize_t n = ::read(fd.get(), buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) problem = std::string("read error: ") + std::strerror(errno);
            if (n <= 0) break;
            text.append(buf, static_cast<std::size_t>(n));
            if (text.size() > kMaxTextBytes) {  // it grew while we read
                problem = "more than the " + std::to_string(kMaxTextBytes >> 20) + " MiB a slabcast JSON file may have";
                break;
            }
        }
    }
    if (!problem.empty()) throw std::runtime_error(path + ": " + problem);
    return text;
}

nlohmann::json parse(const std::string& text, const std::string& path) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        // Not only parse_error: a number too large for a double is out_of_range
        // (found by fuzz_descriptor; testing/fuzz/regressions/).
        throw std::runtime_error(path + ": not valid JSON (" + e.what() + ")");
    }
}

void write_atomically(const std::string& path, const std::string& text, bool durable) {
    // A name of our own, created afresh (O_EXCL) and never through a symbolic
    // link (O_NOFOLLOW): a link planted as NAME.tmp in a shared directory led
    // the write to whatever file it named.
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    ::unlink(tmp.c_str());
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd.valid()) throw std::runtime_error(tmp + ": cannot write: " + std::strerror(errno));
    std::string problem;
    for (std::size_t done = 0; done < text.size() && problem.empty();) {
        const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) problem = std::string("write error: ") + std::strerror(errno);
        else done += static_cast<std::size_t>(n);
    }
    // Readable by all (the renderer may run as another user), writable by the
    // owner only, whatever the umask.
    if (problem.empty() && ::fchmod(fd.get(), 0644) != 0) problem = std::string("cannot chmod: ") + std::strerror(errno);
    if (problem.empty() && durable && ::fsync(fd.get()) != 0)
        problem = std::string("cannot sync: ") + std::strerror(errno);
    fd.reset();  // written and closed before it takes the name
    if (problem.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
        problem = std::string("cannot rename into place: ") + std::strerror(errno);
    if (!problem.empty()) {
        ::unlink(tmp.c_str());
        throw std::runtime_error(path + ": " + problem);
    }
}

}  // namespace slabcast::json_file
