# Runs at install time (install(SCRIPT), see StrataInstall.cmake): installs the
# umbrella header include/strata/strata.h and every header it reaches through
# `#include "..."`, each under <prefix>/include/strata/<its path in the source
# tree>. What the umbrella does not reach is private and stays out. Walking the
# includes when installing (not when configuring) keeps the list current without
# a reconfigure after every header edit, and without a hand-kept list.
#
# Set by the caller: STRATA_HEADER_ROOTS, the directories a quoted include is
# looked up in (the source root first; add a generated-header directory here
# when a public header includes one), and STRATA_UMBRELLA, the umbrella's path.

# The file `inc` included from `from` (a path under one of the roots): beside the
# including file first, as the preprocessor looks, then under each root.
function(_strata_resolve_include from inc out)
  get_filename_component(_dir "${from}" DIRECTORY)
  foreach(base IN ITEMS "${_dir}" "")
    foreach(root IN LISTS STRATA_HEADER_ROOTS)
      get_filename_component(_abs "${root}/${base}/${inc}" ABSOLUTE)
      if(EXISTS "${_abs}" AND NOT IS_DIRECTORY "${_abs}")
        file(RELATIVE_PATH _rel "${root}" "${_abs}")
        set(${out} "${root}|${_rel}" PARENT_SCOPE)
        return()
      endif()
    endforeach()
  endforeach()
  message(FATAL_ERROR "strata headers: ${from} includes \"${inc}\", which is in none of "
                      "STRATA_HEADER_ROOTS (${STRATA_HEADER_ROOTS})")
endfunction()

file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/include/strata" TYPE FILE FILES "${STRATA_UMBRELLA}")
file(STRINGS "${STRATA_UMBRELLA}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
set(_todo)
foreach(line IN LISTS _lines)
  string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" _inc "${line}")
  _strata_resolve_include("strata.h" "${_inc}" _found)
  list(APPEND _todo "${_found}")
endforeach()

set(_seen)
while(_todo)
  list(POP_FRONT _todo _item)
  list(FIND _seen "${_item}" _at)  # not IN_LIST: install scripts run with CMake's old policies
  if(NOT _at EQUAL -1)
    continue()
  endif()
  list(APPEND _seen "${_item}")
  string(REPLACE "|" ";" _parts "${_item}")
  list(GET _parts 0 _root)
  list(GET _parts 1 _rel)
  file(STRINGS "${_root}/${_rel}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS _lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" _inc "${line}")
    _strata_resolve_include("${_rel}" "${_inc}" _found)
    list(APPEND _todo "${_found}")
  endforeach()
  get_filename_component(_dir "${_rel}" DIRECTORY)
  file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/include/strata/${_dir}" TYPE FILE FILES "${_root}/${_rel}")
endwhile()
list(LENGTH _seen _n)
message(STATUS "strata headers: ${_n} public headers reached from include/strata/strata.h")
