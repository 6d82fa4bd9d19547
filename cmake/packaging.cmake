# `cpack -G DEB` in a build tree (or `make package` at the top, which builds
# one of its own with prefix /usr): one Debian package, slabcast, holding what
# `cmake --install` installs (install.cmake), under the same prefix, so that
# every path the build wrote into a file (slabcast.pc, the units' ExecStart,
# the man pages) is where the package puts it. The default prefix /usr/local
# gives a package that installs there; -DCMAKE_INSTALL_PREFIX=/usr gives one in
# Debian's layout, the plugin beside Debian's ParaView plugins in
# /usr/lib/x86_64-linux-gnu/paraview-5.11/plugins.
#
# Included last from the top-level CMakeLists.txt: it lists the install
# components every folder defined.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME slabcast)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "live volume streaming over UDP into shared memory, rendered by ParaView")
set(CPACK_PACKAGE_DESCRIPTION "slabcast streams the timesteps of a float32 volume over UDP, one
stream per z-slab, into shared memory on the render hosts, where its ParaView
reader plugin maps them without a copy and renders them live. The package holds
the slabcast daemons (receive, stage, shuffle, control, serve) with systemd unit
templates, the ParaView 5.11 reader plugin and its pvbatch programs, the sender
library libslabcast for simulations, and the man pages.")
set(SLABCAST_PACKAGE_CONTACT "slabcast maintainers <root@localhost>" CACHE STRING
    "the .deb's Maintainer field: who builds this site's package")
set(CPACK_PACKAGE_CONTACT "${SLABCAST_PACKAGE_CONTACT}")
# DESTDIR staging: the install scripts then see the real prefix (the units'
# ExecStart is written at install time), not cpack's scratch folder.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Without the debug information of a RelWithDebInfo build: a third of the size.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Libraries the binaries and the plugin link (libnuma, libsodium, fftw3,
# ParaView's own at its exact version, ...), found by dpkg-shlibdeps (dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What no binary links: ParaView's Python for pvbatch/pvpython and the render
# programs, numpy for the sender library's Python module.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "paraview (>= 5.11~), paraview (<< 5.12~), python3-paraview (>= 5.11~), python3-paraview (<< 5.12~), python3, python3-numpy")
# The demo renders without a display and across ranks; `slabcast plot` draws.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "xvfb, openmpi-bin, python3-matplotlib")
# A shlibs file and ldconfig trigger for libslabcast.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# New unit templates are seen without a reboot.
configure_file("${CMAKE_CURRENT_LIST_DIR}/deb/postinst" "${CMAKE_BINARY_DIR}/deb/postinst" COPYONLY)
configure_file("${CMAKE_CURRENT_LIST_DIR}/deb/postrm" "${CMAKE_BINARY_DIR}/deb/postrm" COPYONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${CMAKE_BINARY_DIR}/deb/postinst;${CMAKE_BINARY_DIR}/deb/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# One package of every install component but two that paraview_plugin_build
# adds for the reader's own VTK module (compiled into Slabcast.so): its static
# archives and headers ("development", "runtime"), nothing a site runs or
# builds against.
get_cmake_property(slabcast_components COMPONENTS)
list(REMOVE_ITEM slabcast_components development runtime)
set(CPACK_COMPONENTS_ALL ${slabcast_components})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_DEBIAN_PACKAGE_NAME slabcast)

include(CPack)
