# STRATA_TEST_PYTHON: the Python that runs the suite's checks written in Python
# (h5py, numpy, yaml, safetensors through a venv of its own). Debian's
# /usr/bin/python3 where it exists: the scripts install python3-h5py and
# python3-yaml for it, whereas the python3 first on PATH may be pyenv's shim or
# an active venv without them (seen: a fresh machine of ours, pyenv first, where
# setup.sh's configure cached pyenv's python as STRATA_PYTHON3, the name this
# had before, and the h5py tests failed later; an old cache's STRATA_PYTHON3 is
# now ignored).
# Chosen again at every configure, so a build directory configured earlier with
# another interpreter is corrected (setup.sh and test.sh reconfigure); a value
# given with -DSTRATA_TEST_PYTHON=... that differs from the automatic choice is kept.
set(_strata_py_auto "")
if(EXISTS /usr/bin/python3)
  set(_strata_py_auto /usr/bin/python3)
else()
  find_program(_strata_py_found NAMES python3 NO_CACHE)
  set(_strata_py_auto "${_strata_py_found}")
endif()
if(NOT _strata_py_auto)
  message(FATAL_ERROR "no python3 found: the test suite's checks need one (apt-get install python3)")
endif()
if(NOT DEFINED CACHE{STRATA_TEST_PYTHON} OR STRATA_TEST_PYTHON STREQUAL "$CACHE{STRATA_TEST_PYTHON_AUTO}")
  set(STRATA_TEST_PYTHON "${_strata_py_auto}" CACHE FILEPATH "Python for the test suite's checks" FORCE)
endif()
set(STRATA_TEST_PYTHON_AUTO "${_strata_py_auto}" CACHE INTERNAL "the automatic choice of STRATA_TEST_PYTHON")
message(STATUS "Python for the suite's checks: ${STRATA_TEST_PYTHON}")
