#include "slabcast/dataset.h"

#include "slabcast/confined_path.h"
#include "slabcast/json_file.h"
#include "slabcast/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace slabcast {

using nlohmann::json;
using json_file::field;
using json_file::field_or;

const DatasetStep* Dataset::find_step(int number) const {
    for (const auto& s : steps)
        if (s.number == number) return &s;
    return nullptr;
}

namespace {

std::string plain_file(const json& s, const char* key, const std::string& file) {
    const std::string name = field<std::string>(s, key, file);
    if (!is_plain_name(name))
        throw std::runtime_error(file + ": step file '" + name + "' must be a plain name in the directory");
    return name;
}

void read_point(const json& j, const char* key, double out[3], const std::string& file) {
    if (!j.contains(key)) return;
    const auto v = field<std::vector<double>>(j, key, file);
    if (v.size() != 3 || !std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2]))
        throw std::runtime_error(file + ": '" + key + "' must be three finite numbers");
    for (int i = 0; i < 3; ++i) out[i] = v[i];
}

RecordedStep read_recorded(const json& r, const std::string& file) {
    RecordedStep out;
    out.records = field<std::uint64_t>(r, "records", file);
    out.expected = field<std::uint64_t>(r, "expected", file);
    out.holes = field<std::uint64_t>(r, "holes", file);
    out.repaired = field_or<std::uint64_t>(r, "repaired", 0, file);
    out.complete = field<bool>(r, "complete", file);
    out.published_ns = field<std::int64_t>(r, "published_ns", file);
    out.started_ns = field_or<std::int64_t>(r, "started_ns", 0, file);
    out.stored_bytes = field_or<std::uint64_t>(r, "stored_bytes", 0, file);
    return out;
}

RecordingInfo read_recording(const json& r, const std::string& file) {
    RecordingInfo out;
    out.source = field<std::string>(r, "source", file);
    out.started_ns = field<std::int64_t>(r, "started_ns", file);
    out.slab_depth = field_or<int>(r, "slab_depth", 0, file);
    if (out.slab_depth < 0 || out.slab_depth > kMaxAxis) throw std::runtime_error(file + ": 'slab_depth' out of range");
    out.budget_bytes = field_or<std::uint64_t>(r, "budget_bytes", 0, file);
    out.steps_recorded = field_or<std::uint64_t>(r, "steps_recorded", 0, file);
    out.steps_evicted = field_or<std::uint64_t>(r, "steps_evicted", 0, file);
    out.steps_skipped = field_or<std::uint64_t>(r, "steps_skipped", 0, file);
    return out;
}

void sync_directory(const std::string& dir) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid() || ::fsync(fd.get()) != 0)
        throw std::runtime_error(dir + ": cannot sync the directory: " + std::strerror(errno));
}

}  // namespace

Dataset read_dataset(const std::string& path, bool allow_empty) {
    struct stat st {};
    std::string file = path;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) file = path + "/dataset.json";
    const json j = json_file::parse(json_file::read_text(file), file);
    Dataset d;
    d.directory = file.substr(0, file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/'));
    if (d.directory.empty()) d.directory = ".";
    d.name = field<std::string>(j, "name", file);
    d.field = field<std::string>(j, "field", file);
    if (j.contains("units")) d.units = field<std::string>(j, "units", file);
    if (field<std::string>(j, "dtype", file) != "float32")
        throw std::runtime_error(file + ": only dtype float32 is supported");
    const auto dims = field<std::vector<std::int64_t>>(j, "dims", file);
    if (dims.size() != 3 || dims[0] < 1 || dims[1] < 1 || dims[2] < 1)
        throw std::runtime_error(file + ": 'dims' must be three positive sizes");
    d.dims = Dims{dims[0], dims[1], dims[2]};
    // step_bytes() multiplies them: within kMaxAxis it cannot wrap.
    if (const std::string p = volume_problem(d.dims, 1); !p.empty()) throw std::runtime_error(file + ": " + p);
    read_point(j, "origin", d.origin, file);
    read_point(j, "spacing", d.spacing, file);
    if (!(d.spacing[0] > 0 && d.spacing[1] > 0 && d.spacing[2] > 0))
        throw std::runtime_error(file + ": 'spacing' must be positive");
    if (j.contains("recording")) d.recording = read_recording(field<json>(j, "recording", file), file);
    for (const auto& s : field<json>(j, "steps", file)) {
        DatasetStep step;
        step.number = field<int>(s, "step", file);
        const std::string where = file + ": step " + std::to_string(step.number);
        step.file = plain_file(s, "file", file);
        try {
            step.codec = parse_step_codec(field_or<std::string>(s, "codec", "none", file));
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(where + ": " + e.what());
        }
        if (s.contains("ages")) step.ages = plain_file(s, "ages", file);
        if (s.contains("recorded")) step.recorded = read_recorded(field<json>(s, "recorded", where), where);
        if (d.find_step(step.number))
            throw std::runtime_error(file + ": step " + std::to_string(step.number) + " listed twice");
        d.steps.push_back(step);
    }
    if (d.steps.empty() && !allow_empty) throw std::runtime_error(file + ": no steps listed");
    return d;
}

void write_dataset_descriptor(const Dataset& d, bool durable) {
    json steps = json::array();
    for (const auto& s : d.steps) {
        json e = {{"step", s.number}, {"file", s.file}};
        if (s.codec != StepCodec::None) e["codec"] = to_string(s.codec);
        if (!s.ages.empty()) e["ages"] = s.ages;
        if (s.recorded) {
            const RecordedStep& r = *s.recorded;
            e["recorded"] = {{"records", r.records},   {"expected", r.expected},         {"holes", r.holes},
                             {"repaired", r.repaired},
                             {"complete", r.complete}, {"published_ns", r.published_ns}, {"started_ns", r.started_ns},
                             {"stored_bytes", r.stored_bytes}};
        }
        steps.push_back(e);
    }
    json j = {{"name", d.name},   {"field", d.field},       {"units", d.units},
              {"dtype", "float32"}, {"endian", "little"}, {"dims", {d.dims.nx, d.dims.ny, d.dims.nz}},
              {"origin", {d.origin[0], d.origin[1], d.origin[2]}},
              {"spacing", {d.spacing[0], d.spacing[1], d.spacing[2]}}};
    if (d.recording) {
        const RecordingInfo& r = *d.recording;
        j["recording"] = {{"source", r.source},
                          {"started_ns", r.started_ns},
                          {"slab_depth", r.slab_depth},
                          {"budget_bytes", r.budget_bytes},
                          {"steps_recorded", r.steps_recorded},
                          {"steps_evicted", r.steps_evicted},
                          {"steps_skipped", r.steps_skipped}};
    }
    j["steps"] = steps;
    const std::string path = d.directory + "/dataset.json";
    json_file::write_atomically(path, j.dump(durable ? -1 : 2) + "\n", durable);
    if (durable) sync_directory(d.directory);
}

}  // namespace slabcast
