# cmake -P help_docs.cmake: the reference documentation of the `slabcast`
# binary, written from its own --help so that it cannot drift from the code:
#   OUT/help/slabcast.txt, OUT/help/slabcast-SUB.txt   `slabcast [SUB] --help`, always
#   OUT/man/slabcast.1.gz, OUT/man/slabcast-SUB.1.gz   the same as man pages, with help2man
# The subcommands are read from `slabcast --help`, so a new one gets its page.
#
# -DSLABCAST=the binary  -DOUT=folder  -DVERSION=x.y.z  -DDOCDIR=installed docs  [-DHELP2MAN=path]
foreach(var SLABCAST OUT VERSION DOCDIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "help_docs.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}/help" "${OUT}/man" "${OUT}/wrap")
file(MAKE_DIRECTORY "${OUT}/help" "${OUT}/wrap")

# CLI11 prints argv[0] in its usage line: run every page through a wrapper that
# names the program `slabcast`, not the build tree's path. bash: `exec -a`.
function(write_wrapper name args)
  file(WRITE "${OUT}/wrap/${name}" "#!/bin/bash\nexec -a slabcast '${SLABCAST}' ${args} \"$@\"\n")
  file(CHMOD "${OUT}/wrap/${name}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
       WORLD_READ WORLD_EXECUTE)
endfunction()

function(help_text name out_var)
  execute_process(COMMAND "${OUT}/wrap/${name}" --help RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR text STREQUAL "")
    message(FATAL_ERROR "help_docs.cmake: `${name} --help` failed (${rc}): ${err}")
  endif()
  file(WRITE "${OUT}/help/${name}.txt" "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

write_wrapper(slabcast "")
help_text(slabcast main_help)

# "Subcommands:" then one "  NAME   description" line each, until a blank line.
string(REGEX MATCH "\nSubcommands:\n(.*)" section "${main_help}")
string(REGEX REPLACE "\n\n.*" "" section "${CMAKE_MATCH_1}")
string(REPLACE "\n" ";" lines "${section}")
set(subcommands)
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([a-z][a-z0-9-]*) +(.*)$")
    set(sub "${CMAKE_MATCH_1}")
    list(APPEND subcommands ${sub})
    set(description_${sub} "${CMAKE_MATCH_2}")
  endif()
endforeach()
if(NOT subcommands)
  message(FATAL_ERROR "help_docs.cmake: no subcommands found in `slabcast --help`:\n${main_help}")
endif()
foreach(sub IN LISTS subcommands)
  write_wrapper(slabcast-${sub} "${sub}")
  help_text(slabcast-${sub} ignored)
endforeach()
list(LENGTH subcommands count)

if(NOT HELP2MAN)
  message(STATUS "slabcast: help pages for slabcast and its ${count} subcommands (no help2man: no man pages)")
  return()
endif()
file(MAKE_DIRECTORY "${OUT}/man")
set(see_also "[SEE ALSO]\n")
foreach(sub IN LISTS subcommands)
  string(APPEND see_also ".BR slabcast-${sub} (1),\n")
endforeach()
string(APPEND see_also "and the deployment guide, ${DOCDIR}/docs/deployment.md\n")
file(WRITE "${OUT}/wrap/see-also.h2m" "${see_also}")

function(man_page name description)
  # --version-string: only the top-level command has --version.
  execute_process(
    COMMAND "${HELP2MAN}" --no-info --version-string=${VERSION} --source=slabcast --section=1
            "--name=${description}" --include=${OUT}/wrap/see-also.h2m
            --output=${OUT}/man/${name}.1 "${OUT}/wrap/${name}"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help_docs.cmake: help2man ${name} failed (${rc}): ${err}")
  endif()
  # Debian installs man pages compressed; -n leaves the time out, so a rebuild
  # gives the same bytes.
  execute_process(COMMAND gzip -9nf "${OUT}/man/${name}.1" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help_docs.cmake: gzip ${name}.1 failed")
  endif()
endfunction()

man_page(slabcast "live volume streaming over UDP into shared memory, rendered by ParaView")
foreach(sub IN LISTS subcommands)
  man_page(slabcast-${sub} "${description_${sub}}")
endforeach()
message(STATUS "slabcast: help pages and man pages for slabcast and its ${count} subcommands")
