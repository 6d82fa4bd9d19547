#include "record/recording_ring.h"

#include "slabcast/clock.h"
#include "slabcast/step_file.h"
#include "slabcast/unique_fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <regex>
#include <set>
#include <system_error>

namespace slabcast {

namespace {

// The names a recording writes: step_NNNNNN-SSSSSSSS.{raw,age}[.lz4], the
// sequence number S telling apart two recordings of the same step, and
// ".part" while a file is being written.
const std::regex kRecordingFile(R"(step_-?[0-9]+-[0-9]+\.(raw|age)(\.lz4)?(\.part)?)");
const char* const kPart = ".part";

bool disk_full(int error) { return error == ENOSPC || error == EDQUOT; }

std::string file_name(int number, std::uint64_t seq, const char* kind, StepCodec codec) {
    char name[96];
    std::snprintf(name, sizeof name, "step_%06d-%08llu.%s%s", number, static_cast<unsigned long long>(seq), kind,
                  codec == StepCodec::Lz4 ? ".lz4" : "");
    return name;
}

std::vector<std::string> directory_entries(const std::string& dir) {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw std::runtime_error(dir + ": cannot list: " + std::strerror(errno));
    while (const dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    return names;
}

std::uint64_t file_bytes(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// Thrown inside a step's write when the disk has no room.
struct NoRoom {};

}  // namespace

RecordingRing::RecordingRing(const std::string& directory, const Dataset& shape, const std::string& source,
                             int slab_depth, StepCodec codec, std::uint64_t budget_bytes)
    : codec_(codec) {
    if (::mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST)
        throw std::runtime_error(directory + ": cannot create: " + std::strerror(errno));
    dataset_ = shape;
    dataset_.directory = directory;
    dataset_.steps.clear();
    if (::access((directory + "/dataset.json").c_str(), F_OK) == 0) {
        resume(shape);
    } else {
        for (const auto& n : directory_entries(directory))
            if (!std::regex_match(n, kRecordingFile) && n.rfind("dataset.json.tmp-", 0) != 0)
                throw std::runtime_error(directory + ": holds '" + n +
                                         "' and no recording: give an empty directory or a recording to go on with");
        dataset_.recording = RecordingInfo{};
        dataset_.recording->started_ns = realtime_ns();
    }
    dataset_.recording->source = source;
    dataset_.recording->slab_depth = slab_depth;
    dataset_.recording->budget_bytes = budget_bytes;
    remove_unlisted();
    publish_list();
}

void RecordingRing::resume(const Dataset& shape) {
    const std::string dir = dataset_.directory;
    Dataset found = read_dataset(dir, /*allow_empty=*/true);
    if (!found.recording)
        throw std::runtime_error(dir + ": holds a dataset, not a recording: give an empty directory or a recording");
    if (!(found.dims == shape.dims) || found.field != shape.field)
        throw std::runtime_error(dir + ": records field '" + found.field + "' of a " + to_string(found.dims) +
                                 " volume, the stream sends '" + shape.field + "' of " + to_string(shape.dims) +
                                 ": give another directory");
    dataset_.recording = found.recording;
    for (const auto& s : found.steps) {
        const bool whole = ::access((dir + "/" + s.file).c_str(), R_OK) == 0 &&
                           (s.ages.empty() || ::access((dir + "/" + s.ages).c_str(), R_OK) == 0);
        if (!whole) {
            spdlog::warn("record: {}: step {} is listed but its files are gone: left out", dir, s.number);
            continue;
        }
        dataset_.steps.push_back(s);
        const std::uint64_t bytes =
            file_bytes(dir + "/" + s.file) + (s.ages.empty() ? 0 : file_bytes(dir + "/" + s.ages));
        stored_bytes_ += bytes;
        last_step_bytes_ = bytes;
    }
    spdlog::info("record: {}: goes on with {} recorded steps ({} MiB)", dir, dataset_.steps.size(),
                 stored_bytes_ >> 20);
}

void RecordingRing::remove_unlisted() {
    std::set<std::string> listed;
    for (const auto& s : dataset_.steps) {
        listed.insert(s.file);
        if (!s.ages.empty()) listed.insert(s.ages);
    }
    for (const auto& n : directory_entries(dataset_.directory)) {
        const bool ours = std::regex_match(n, kRecordingFile) || n.rfind("dataset.json.tmp-", 0) == 0;
        if (ours && !listed.count(n)) {
            spdlog::info("record: {}: removing '{}', left by a run that stopped before it was listed",
                         dataset_.directory, n);
            ::unlink((dataset_.directory + "/" + n).c_str());
        }
    }
}

void RecordingRing::write_file(const std::string& name, const void* data, std::uint64_t bytes, std::uint64_t& stored) {
    const std::string path = dataset_.directory + "/" + name;
    const std::string part = path + kPart;
    UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd.valid()) {
        if (disk_full(errno)) throw NoRoom{};
        throw std::runtime_error(part + ": cannot create: " + std::strerror(errno));
    }
    // Whatever stops the write (a full disk, an LZ4 error, memory), the part
    // goes with it: no budget counts an unlisted file.
    try {
        StepFileWriter w(fd.get(), codec_, bytes);
        w.write(data, bytes);
        w.finish();
        stored += w.stored_bytes();
        // Synced before it takes its name: a listed step's bytes are on the disk.
        if (::fsync(fd.get()) != 0 || ::rename(part.c_str(), path.c_str()) != 0)
            throw std::system_error(errno, std::generic_category(), path + ": cannot write");
    } catch (const std::system_error& e) {
        ::unlink(part.c_str());
        if (disk_full(e.code().value())) throw NoRoom{};
        throw std::runtime_error(part + ": " + e.what());
    } catch (const std::exception& e) {
        ::unlink(part.c_str());
        throw std::runtime_error(part + ": " + e.what());
    }
}

bool RecordingRing::write_step(const StepToRecord& step, DatasetStep& entry, std::uint64_t& stored) {
    const std::uint64_t seq = dataset_.recording->steps_recorded;
    entry.number = step.number;
    entry.codec = codec_;
    entry.file = file_name(step.number, seq, "raw", codec_);
    entry.ages = file_name(step.number, seq, "age", codec_);
    stored = 0;
    const std::uint64_t count = static_cast<std::uint64_t>(dataset_.dims.count());
    try {
        write_file(entry.file, step.values, count * sizeof(float), stored);
        write_file(entry.ages, step.ages, count, stored);
    } catch (const NoRoom&) {
        ::unlink((dataset_.directory + "/" + entry.file).c_str());
        return false;
    } catch (const std::exception&) {
        ::unlink((dataset_.directory + "/" + entry.file).c_str());  // nothing of an unlisted step stays
        throw;
    }
    return true;
}

RecordingRing::Result RecordingRing::add(const StepToRecord& step) {
    RecordingInfo& info = *dataset_.recording;
    const std::uint64_t budget = info.budget_bytes;
    const std::uint64_t count = static_cast<std::uint64_t>(dataset_.dims.count());
    const std::uint64_t estimate = last_step_bytes_ ? last_step_bytes_ : count * (sizeof(float) + 1);
    while (budget && stored_bytes_ + estimate > budget && evict_oldest()) {
    }
    DatasetStep entry;
    std::uint64_t stored = 0;
    while (!write_step(step, entry, stored)) {
        if (budget && evict_oldest()) continue;
        ++info.steps_skipped;
        try {
            publish_list();
        } catch (const std::exception&) {
            // No room for the counters either: they are written with the next step.
        }
        return Result::DiskFull;
    }
    entry.recorded = step.report;
    entry.recorded->stored_bytes = stored;
    // A step number heard again (the sender went round its steps once more):
    // the newest recording of it replaces the older one.
    std::vector<DatasetStep> replaced;
    for (auto it = dataset_.steps.begin(); it != dataset_.steps.end();) {
        if (it->number == step.number) {
            replaced.push_back(*it);
            it = dataset_.steps.erase(it);
        } else {
            ++it;
        }
    }
    dataset_.steps.push_back(entry);
    ++info.steps_recorded;
    try {
        publish_list();
    } catch (const std::exception& e) {
        // The list on disk is the one before: the new files are not listed.
        dataset_.steps.pop_back();
        for (const auto& r : replaced) dataset_.steps.push_back(r);
        --info.steps_recorded;
        remove_files(entry);
        ++info.steps_skipped;
        spdlog::warn("record: step {} not recorded: {}", step.number, e.what());
        return Result::DiskFull;
    }
    for (const auto& r : replaced) {
        stored_bytes_ -= std::min(stored_bytes_, r.recorded ? r.recorded->stored_bytes : 0);
        remove_files(r);
    }
    stored_bytes_ += stored;
    last_step_bytes_ = stored;
    while (budget && stored_bytes_ > budget && dataset_.steps.size() > 1 && evict_oldest()) {
    }
    return Result::Recorded;
}

bool RecordingRing::evict_oldest() {
    if (dataset_.steps.empty()) return false;
    const DatasetStep oldest = dataset_.steps.front();
    dataset_.steps.erase(dataset_.steps.begin());
    ++dataset_.recording->steps_evicted;
    try {
        publish_list();
    } catch (const std::exception& e) {
        // Still listed on disk: its files stay.
        dataset_.steps.insert(dataset_.steps.begin(), oldest);
        --dataset_.recording->steps_evicted;
        spdlog::warn("record: cannot drop step {} from the list: {}", oldest.number, e.what());
        return false;
    }
    stored_bytes_ -= std::min(stored_bytes_, oldest.recorded ? oldest.recorded->stored_bytes : 0);
    remove_files(oldest);
    return true;
}

void RecordingRing::remove_files(const DatasetStep& s) {
    ::unlink((dataset_.directory + "/" + s.file).c_str());
    if (!s.ages.empty()) ::unlink((dataset_.directory + "/" + s.ages).c_str());
}

void RecordingRing::count_skipped(std::uint64_t n) { dataset_.recording->steps_skipped += n; }

void RecordingRing::flush() { publish_list(); }

void RecordingRing::publish_list() { write_dataset_descriptor(dataset_, /*durable=*/true); }

}  // namespace slabcast
