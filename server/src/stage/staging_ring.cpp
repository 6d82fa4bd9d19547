#include "stage/staging_ring.h"

#include "base/host_checks.h"

#include "slabcast/units.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace slabcast {
namespace {

constexpr const char* kSlotPrefix = ".slot-";

// The slots of a stager that did not stop cleanly.
void remove_stale_slots(const std::string& staging) {
    DIR* dir = ::opendir(staging.c_str());
    if (!dir) return;
    std::vector<std::string> stale;
    while (const dirent* e = ::readdir(dir)) {
        const std::string name = e->d_name;
        if (name.rfind(kSlotPrefix, 0) == 0) stale.push_back(name);
    }
    ::closedir(dir);
    for (const std::string& name : stale) ::unlink((staging + "/" + name).c_str());
}

}  // namespace

SourceStamp stamp_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": cannot open step file: " + std::strerror(errno));
    return {st.st_dev, st.st_ino, static_cast<std::uint64_t>(st.st_size),
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

UniqueFd take_staging_directory(const std::string& staging) {
    UniqueFd directory(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!directory.valid()) throw std::runtime_error(staging + ": cannot open staging directory: " + std::strerror(errno));
    if (::flock(directory.get(), LOCK_EX | LOCK_NB) != 0)
        throw std::runtime_error(staging + ": another `slabcast stage` is using this staging directory; one stager a "
                                 "directory (give each its own --staging)");
    remove_stale_slots(staging);
    return directory;
}

StagingRing::StagingRing(UniqueFd directory, const std::string& staging, std::uint64_t slot_bytes, long most_slots)
    : staging_(staging), slot_bytes_(slot_bytes), most_slots_(most_slots), directory_(std::move(directory)) {
    slots_.reserve(static_cast<std::size_t>(most_slots));
}

StagingRing::~StagingRing() {
    for (const Slot& s : slots_) ::unlink(s.path.c_str());
}

int StagingRing::create_slot() {
    Slot s;
    s.path = staging_ + "/" + kSlotPrefix + std::to_string(slots_.size());
    ::unlink(s.path.c_str());
    s.fd.reset(::open(s.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
    if (!s.fd.valid()) throw std::runtime_error(s.path + ": cannot create staging slot: " + std::strerror(errno));
    // Every page reserved (and zeroed, so touched) now, once: a full tmpfs
    // fails here, before anything is read, not part of the way through a copy.
    const int rc = ::ftruncate(s.fd.get(), static_cast<off_t>(slot_bytes_)) != 0 ? errno
                   : slot_bytes_ > 0 ? ::posix_fallocate(s.fd.get(), 0, static_cast<off_t>(slot_bytes_))
                                     : 0;
    if (rc != 0) {
        ::unlink(s.path.c_str());
        throw std::runtime_error(s.path + ": cannot reserve " + format_bytes(slot_bytes_) + " for a staging slot: " +
                                 std::strerror(rc) + " (" + staging_ + " has " + format_bytes(free_bytes(staging_)) +
                                 " free)");
    }
    slots_.push_back(std::move(s));
    return static_cast<int>(slots_.size() - 1);
}

std::optional<StagingRing::Claim> StagingRing::claim(const std::string& file, const SourceStamp& source) {
    for (std::size_t k = 0; k < slots_.size(); ++k) {
        Slot& s = slots_[k];
        if (!s.published && !s.claimed && s.file == file && s.source == source) {
            s.claimed = true;
            return Claim{static_cast<int>(k), true};
        }
    }
    int slot = -1;
    if (static_cast<long>(slots_.size()) < most_slots_) {
        slot = create_slot();
    } else {
        // The free slot staged longest ago whose readers have all let go.
        for (std::size_t k = 0; k < slots_.size(); ++k) {
            const Slot& s = slots_[k];
            if (s.published || s.claimed || (slot >= 0 && s.last_used >= slots_[static_cast<std::size_t>(slot)].last_used))
                continue;
            if (::flock(s.fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // a shuffler still sends from it
            if (slot >= 0) ::flock(slots_[static_cast<std::size_t>(slot)].fd.get(), LOCK_UN);
            slot = static_cast<int>(k);
        }
        if (slot < 0) return std::nullopt;
    }
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    s.claimed = true;
    s.file.clear();  // its values are about to change
    return Claim{slot, false};
}

void StagingRing::publish(int slot, const std::string& file, const SourceStamp& source) {
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    const std::string name = step_path(file);
    // A name left by a stager that stopped without cleaning up is replaced.
    ::unlink(name.c_str());
    if (::link(s.path.c_str(), name.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        abandon(slot);
        throw std::runtime_error(name + ": cannot put the staged step in place: " + why);
    }
    s.file = file;
    s.source = source;
    s.published = true;
    s.claimed = false;
    s.last_used = ++uses_;
    ::flock(s.fd.get(), LOCK_UN);
}

void StagingRing::abandon(int slot) {
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    s.file.clear();
    s.claimed = false;
    ::flock(s.fd.get(), LOCK_UN);
}

void StagingRing::unpublish(int slot) {
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    if (s.published) ::unlink(step_path(s.file).c_str());
    s.published = false;
}

}  // namespace slabcast
