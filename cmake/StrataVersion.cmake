# strata's version and git commit, for `--version` and the run directory's run.json.
#
# Included from the top CMakeLists: strata_version_header(<target>) makes a custom
# target that rewrites ${PROJECT_BINARY_DIR}/generated/strata_version.h at every
# build (not only at configure time, so a new commit is seen without re-running
# cmake), and adds that directory to <target>'s private include path. The header
# is rewritten only when its text changes, so an unchanged commit recompiles
# nothing. Run as a script (cmake -P) it writes the header itself.
#
# The commit is `git rev-parse --short=12 HEAD` of the source tree, with
# "-dirty" when tracked files differ from it; "unknown" outside a git checkout
# (a source tarball) or without git.

if(CMAKE_SCRIPT_MODE_FILE)
  set(_commit "unknown")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${STRATA_SOURCE_DIR} rev-parse --short=12 HEAD
      OUTPUT_VARIABLE _head RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_rc EQUAL 0 AND _head)
      set(_commit ${_head})
      execute_process(COMMAND ${GIT_EXECUTABLE} -C ${STRATA_SOURCE_DIR} diff --quiet HEAD --
        RESULT_VARIABLE _dirty ERROR_QUIET)
      if(NOT _dirty EQUAL 0)
        string(APPEND _commit "-dirty")
      endif()
    endif()
  endif()
  set(_text "// Generated at build time by cmake/StrataVersion.cmake. Do not edit.\n"
            "#pragma once\n"
            "#define STRATA_VERSION_STRING \"${STRATA_VERSION}\"\n"
            "#define STRATA_GIT_COMMIT \"${_commit}\"\n")
  string(CONCAT _text ${_text})
  set(_old "")
  if(EXISTS ${STRATA_VERSION_HEADER})
    file(READ ${STRATA_VERSION_HEADER} _old)
  endif()
  if(NOT _old STREQUAL _text)
    file(WRITE ${STRATA_VERSION_HEADER} "${_text}")
  endif()
  return()
endif()

function(strata_version_header target)
  set(_dir ${PROJECT_BINARY_DIR}/generated)
  set(_header ${_dir}/strata_version.h)
  add_custom_target(strata_version_header
    COMMAND ${CMAKE_COMMAND} -DSTRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR} -DSTRATA_VERSION=${PROJECT_VERSION}
            -DSTRATA_VERSION_HEADER=${_header} -P ${PROJECT_SOURCE_DIR}/cmake/StrataVersion.cmake
    BYPRODUCTS ${_header}
    COMMENT "strata version header (git commit)"
    VERBATIM)
  add_dependencies(${target} strata_version_header)
  target_include_directories(${target} PRIVATE $<BUILD_INTERFACE:${_dir}>)
endfunction()
