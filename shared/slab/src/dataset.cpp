#include "slabcast/dataset.h"

#include "slabcast/confined_path.h"
#include "slabcast/json_file.h"

#include <sys/stat.h>

namespace slabcast {

using nlohmann::json;
using json_file::field;

const DatasetStep* Dataset::find_step(int number) const {
    for (const auto& s : steps)
        if (s.number == number) return &s;
    return nullptr;
}

Dataset read_dataset(const std::string& path) {
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
    for (const auto& s : field<json>(j, "steps", file)) {
        DatasetStep step;
        step.number = field<int>(s, "step", file);
        step.file = field<std::string>(s, "file", file);
        if (!is_plain_name(step.file))
            throw std::runtime_error(file + ": step file '" + step.file + "' must be a plain name in the directory");
        if (d.find_step(step.number))
            throw std::runtime_error(file + ": step " + std::to_string(step.number) + " listed twice");
        d.steps.push_back(step);
    }
    if (d.steps.empty()) throw std::runtime_error(file + ": no steps listed");
    return d;
}

void write_dataset_descriptor(const Dataset& d) {
    json steps = json::array();
    for (const auto& s : d.steps) steps.push_back({{"step", s.number}, {"file", s.file}});
    json j = {{"name", d.name},   {"field", d.field},       {"units", d.units},
              {"dtype", "float32"}, {"endian", "little"}, {"dims", {d.dims.nx, d.dims.ny, d.dims.nz}},
              {"steps", steps}};
    json_file::write_atomically(d.directory + "/dataset.json", j.dump(2) + "\n");
}

}  // namespace slabcast
