#include "base/key_file.h"

#include "slabcast/unique_fd.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace slabcast {

control::SyncKey load_sync_key(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw std::runtime_error("key file " + path + ": " + std::strerror(errno) + " (slabcast keygen " + path +
                                 " makes one)");
    if (!S_ISREG(st.st_mode)) throw std::runtime_error("key file " + path + ": not a regular file");
    if (st.st_mode & 077) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw std::runtime_error("key file " + path + " can be read by group or others (mode " + mode +
                                 "): chmod 600 " + path);
    }
    std::ifstream in(path);
    std::string hex;
    in >> hex;
    control::SyncKey key;
    std::size_t used = 0;
    if (hex.size() != 2 * key.bytes.size() ||
        sodium_hex2bin(key.bytes.data(), key.bytes.size(), hex.data(), hex.size(), nullptr, &used, nullptr) != 0 ||
        used != key.bytes.size())
        throw std::runtime_error("key file " + path + ": must hold 64 hexadecimal characters (slabcast keygen writes one)");
    return key;
}

void write_new_key(const std::string& path) {
    if (sodium_init() < 0) throw std::runtime_error("libsodium could not initialise");
    control::SyncKey key;
    randombytes_buf(key.bytes.data(), key.bytes.size());
    char hex[2 * sizeof key.bytes + 1];
    sodium_bin2hex(hex, sizeof hex, key.bytes.data(), key.bytes.size());
    const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd.valid()) throw std::runtime_error(path + ": " + std::strerror(errno) + (errno == EEXIST ? " (not overwritten)" : ""));
    const std::string text = std::string(hex) + "\n";
    const bool ok =
        ::fchmod(fd.get(), 0600) == 0 && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
    sodium_memzero(hex, sizeof hex);
    if (!ok) throw std::runtime_error(path + ": cannot write the key");
}

}  // namespace slabcast
