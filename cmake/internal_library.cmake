# How every internal library of the tree is made, written once.

# The warnings every target of this project compiles with.
add_library(slabcast_warnings INTERFACE)
add_library(slabcast::warnings ALIAS slabcast_warnings)
target_compile_options(slabcast_warnings INTERFACE -Wall -Wextra)

# slabcast_add_library(NAME INCLUDE dir [DEPENDS libs...] [PRIVATE_DEPENDS libs...] SOURCES files...)
# A static library slabcast_NAME, used as slabcast::NAME, whose headers are
# found under INCLUDE by everything that links it.
function(slabcast_add_library name)
  cmake_parse_arguments(arg "" "INCLUDE" "DEPENDS;PRIVATE_DEPENDS;SOURCES" ${ARGN})
  if(NOT arg_INCLUDE OR NOT arg_SOURCES)
    message(FATAL_ERROR "slabcast_add_library(${name}): INCLUDE and SOURCES are required")
  endif()
  add_library(slabcast_${name} STATIC ${arg_SOURCES})
  add_library(slabcast::${name} ALIAS slabcast_${name})
  target_include_directories(slabcast_${name} PUBLIC ${arg_INCLUDE})
  target_link_libraries(slabcast_${name} PUBLIC ${arg_DEPENDS} PRIVATE ${arg_PRIVATE_DEPENDS} slabcast::warnings)
endfunction()
