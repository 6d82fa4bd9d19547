#include "slabcast/json_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace slabcast::json_file {

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    std::ostringstream s;
    s << in.rdbuf();
    if (in.bad()) throw std::runtime_error(path + ": read error");
    return s.str();
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

void write_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error(tmp + ": cannot write: " + std::strerror(errno));
        out << text;
        if (!out.flush()) throw std::runtime_error(tmp + ": write error");
    }
    // Readable by all (the renderer may run as another user), writable by the
    // owner only, whatever the umask.
    if (::chmod(tmp.c_str(), 0644) != 0) throw std::runtime_error(tmp + ": cannot chmod: " + std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error(path + ": cannot rename into place: " + std::strerror(errno));
}

}  // namespace slabcast::json_file
