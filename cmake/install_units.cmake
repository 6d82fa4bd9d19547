# Run by `cmake --install` and by cpack (install(SCRIPT) in install.cmake): the
# systemd unit templates of server/systemd/*.service.in, with ExecStart at
# the installed binary and Documentation at the installed guides. The
# slabcast_units_* variables come from the install(CODE) just before.
function(slabcast_installed_path out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
slabcast_installed_path(SLABCAST_BINDIR "${slabcast_units_bindir}")
slabcast_installed_path(SLABCAST_DOCDIR "${slabcast_units_docdir}")
slabcast_installed_path(unit_dir "${slabcast_units_dir}")

file(GLOB templates "${slabcast_units_source}/*.service.in")
set(units)
foreach(template IN LISTS templates)
  get_filename_component(name "${template}" NAME)
  string(REGEX REPLACE "\\.in$" "" name "${name}")
  configure_file("${template}" "${slabcast_units_binary}/${name}" @ONLY)
  list(APPEND units "${slabcast_units_binary}/${name}")
endforeach()
if(NOT units)
  message(FATAL_ERROR "install_units.cmake: no unit templates in ${slabcast_units_source}")
endif()
file(INSTALL DESTINATION "${unit_dir}" TYPE FILE FILES ${units})
