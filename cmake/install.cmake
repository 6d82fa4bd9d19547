# What `cmake --install` puts where a site looks for it (GNUInstallDirs; the
# .deb of packaging.cmake holds the same, docs/deployment.md "Installing"):
#
#   bin/slabcast, bin/slabcast-datagen                     the roles (server/), the dataset generator
#   LIBDIR/paraview-5.11/plugins/Slabcast/Slabcast.so      the reader (plugin/CMakeLists.txt)
#   share/slabcast/*.py                                    pvbatch/pvpython programs (plugin/),
#                                                          the plotter (server/)
#   LIBDIR/libslabcast.so*, include/slabcast/, LIBDIR/cmake/slabcast/, LIBDIR/pkgconfig/
#                                                          the sender library (server/lib/)
#   share/doc/slabcast/help/*.txt, share/man/man1/*.1.gz   every command's --help (man pages
#                                                          where help2man is installed)
#   share/doc/slabcast/{README.md,CHANGELOG.md,docs/,plugin/,examples/} the guides, a config per daemon
#   lib/systemd/system/slabcast-ROLE@.service              the daemons' unit templates
#
# Included from the top-level CMakeLists.txt after every folder, so that the
# targets named here exist.
if(TARGET slabcast-datagen)
  install(TARGETS slabcast-datagen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The reference pages, written from the binary's own --help at build time so
# that they say what this build does (help_docs.cmake).
find_program(HELP2MAN_EXECUTABLE help2man)
if(NOT HELP2MAN_EXECUTABLE)
  message(STATUS "slabcast: no help2man (apt-get install help2man): --help pages only, no man pages")
endif()
set(slabcast_help_dir "${CMAKE_BINARY_DIR}/doc")
add_custom_command(
  OUTPUT "${slabcast_help_dir}/help.stamp"
  COMMAND ${CMAKE_COMMAND} -DSLABCAST=$<TARGET_FILE:slabcast> -DOUT=${slabcast_help_dir} -DVERSION=${PROJECT_VERSION}
          -DDOCDIR=${CMAKE_INSTALL_FULL_DOCDIR} -DHELP2MAN=${HELP2MAN_EXECUTABLE}
          -P ${CMAKE_CURRENT_LIST_DIR}/help_docs.cmake
  COMMAND ${CMAKE_COMMAND} -E touch "${slabcast_help_dir}/help.stamp"
  DEPENDS slabcast ${CMAKE_CURRENT_LIST_DIR}/help_docs.cmake
  COMMENT "slabcast: help pages from slabcast --help"
  VERBATIM)
add_custom_target(slabcast_help_docs ALL DEPENDS "${slabcast_help_dir}/help.stamp")
install(DIRECTORY "${slabcast_help_dir}/help/" DESTINATION ${CMAKE_INSTALL_DOCDIR}/help)
if(HELP2MAN_EXECUTABLE)
  install(DIRECTORY "${slabcast_help_dir}/man/" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

# The guides, laid out as in the repository so that their links hold.
install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES "${PROJECT_SOURCE_DIR}/CHANGELOG.md" DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "*.png")
install(FILES "${PROJECT_SOURCE_DIR}/plugin/README.md" DESTINATION ${CMAKE_INSTALL_DOCDIR}/plugin)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/server/systemd/examples/" DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# systemd unit templates: written at install time (install_units.cmake), when
# the prefix their ExecStart names is known (cmake --install --prefix, cpack).
# systemd reads /usr/lib/systemd/system and /usr/local/lib/systemd/system.
set(SLABCAST_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
    "where the systemd unit templates go: relative to the install prefix, or absolute")
install(CODE "
set(slabcast_units_source \"${PROJECT_SOURCE_DIR}/server/systemd\")
set(slabcast_units_binary \"${CMAKE_BINARY_DIR}/systemd\")
set(slabcast_units_dir \"${SLABCAST_SYSTEMD_UNIT_DIR}\")
set(slabcast_units_bindir \"${CMAKE_INSTALL_BINDIR}\")
set(slabcast_units_docdir \"${CMAKE_INSTALL_DOCDIR}\")")
install(SCRIPT "${CMAKE_CURRENT_LIST_DIR}/install_units.cmake")
