#include "setup/install_layout.h"

#include <filesystem>

// Set by server/CMakeLists.txt from GNUInstallDirs; these defaults are
// GNUInstallDirs' own for a prefix other than /usr.
#ifndef SLABCAST_INSTALL_LIBDIR
#define SLABCAST_INSTALL_LIBDIR "lib"
#endif
#ifndef SLABCAST_INSTALL_DATADIR
#define SLABCAST_INSTALL_DATADIR "share"
#endif

namespace slabcast {
namespace {
namespace fs = std::filesystem;

const char* const kPluginSubdir = "paraview-5.11/plugins/Slabcast";

InstallLayout build_tree(const fs::path& build) {
    return {(build / "plugin" / SLABCAST_INSTALL_LIBDIR / kPluginSubdir).string(), (build / "plugin").string(),
            (build / "data/slabcast-datagen").string(), "build tree " + build.string()};
}

// An absolute LIBDIR or DATADIR (-DCMAKE_INSTALL_LIBDIR=/opt/...) is used as it is.
fs::path under(const fs::path& prefix, const char* dir) {
    const fs::path d(dir);
    return d.is_absolute() ? d : prefix / d;
}

}  // namespace

InstallLayout find_install_layout(const std::string& build_dir) {
    if (!build_dir.empty()) return build_tree(build_dir);
    const fs::path bin = fs::read_symlink("/proc/self/exe").parent_path();
    const fs::path top = bin.parent_path();
    // A build tree has its CMake cache at the top; an install prefix never does.
    if (fs::exists(top / "CMakeCache.txt")) return build_tree(top);
    return {(under(top, SLABCAST_INSTALL_LIBDIR) / kPluginSubdir).string(),
            (under(top, SLABCAST_INSTALL_DATADIR) / "slabcast").string(), (bin / "slabcast-datagen").string(),
            "install prefix " + top.string()};
}

}  // namespace slabcast
