// Where the programs and files `slabcast demo` starts lie, found from where
// this binary is, so that the same binary works from its build tree and from
// an install prefix (`cmake --install`, the .deb):
//
//   build tree BUILD:  BUILD/server/slabcast, BUILD/plugin/LIBDIR/paraview-5.11/plugins/Slabcast,
//                      BUILD/plugin/*.py, BUILD/data/slabcast-datagen
//   prefix PREFIX:     PREFIX/bin/slabcast, PREFIX/LIBDIR/paraview-5.11/plugins/Slabcast,
//                      PREFIX/share/slabcast/*.py, PREFIX/bin/slabcast-datagen
//
// LIBDIR is the build's CMAKE_INSTALL_LIBDIR (lib, or lib/x86_64-linux-gnu
// for a /usr prefix), compiled in.
#pragma once

#include <string>

namespace slabcast {

struct InstallLayout {
    std::string plugin_dir;  // holds Slabcast.so: what PV_PLUGIN_PATH names
    std::string script_dir;  // slabcast_render.py, slabcast_head_to_head.py, slabcast_gui_open.py
    std::string datagen;     // the dataset generator
    std::string where;       // "build tree DIR" or "install prefix DIR", for messages
};

// `build_dir` (demo --build-dir) forces the build-tree layout of that folder;
// empty: this binary's own build tree, or else its install prefix.
InstallLayout find_install_layout(const std::string& build_dir);

}  // namespace slabcast
