// libFuzzer harness: the data mover's manifest parser, which `slabcast serve`
// runs on what any client that reaches its port sends (and `stage --from` on
// what a data host sends back). It must either throw std::runtime_error or
// return a manifest whose every path stays beneath the destination, is listed
// once, and has a listed directory as its parent; written back, it must parse
// to the same manifest.
#include "mover/manifest.h"

#include <set>
#include <stdexcept>
#include <string>

using namespace slabcast::mover;

namespace {

bool safe(const std::string& path) {
    try {
        check_relative_path(path);
        return true;
    } catch (const std::runtime_error&) {
        return false;
    }
}

bool same(const Manifest& a, const Manifest& b) {
    if (a.block != b.block || a.dirs.size() != b.dirs.size() || a.files.size() != b.files.size()) return false;
    for (std::size_t i = 0; i < a.dirs.size(); ++i)
        if (a.dirs[i].path != b.dirs[i].path || a.dirs[i].mode != b.dirs[i].mode) return false;
    for (std::size_t i = 0; i < a.files.size(); ++i) {
        const ManifestFile &x = a.files[i], &y = b.files[i];
        if (x.path != y.path || x.size != y.size || x.mode != y.mode || x.mtime_ns != y.mtime_ns) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Manifest m;
    try {
        m = manifest_from_json(text);
    } catch (const std::runtime_error&) {
        return 0;
    }
    if (m.block < 4096 || m.block % 4096 != 0) __builtin_trap();
    std::set<std::string> dirs, seen;
    auto check = [&](const std::string& path) {
        if (!safe(path) || !seen.insert(path).second) __builtin_trap();
        const auto slash = path.rfind('/');
        if (slash != std::string::npos && !dirs.count(path.substr(0, slash))) __builtin_trap();
    };
    for (const auto& d : m.dirs) {
        check(d.path);
        dirs.insert(d.path);
        if (d.mode > 07777) __builtin_trap();
    }
    for (const auto& f : m.files) {
        check(f.path);
        if (f.mode > 07777) __builtin_trap();
    }
    if (!same(m, manifest_from_json(to_json(m)))) __builtin_trap();
    return 0;
}
