# strata_add_test(<name> SOURCES ... LABELS ... [DEPS ...] [MPI_RANKS n...] [TIMEOUT s] [ENV k=v ...])
# Returns nothing; add FIXTURES_REQUIRED etc. with set_tests_properties afterwards.
# One GoogleTest executable = one CTest test, labelled unit/mpi/integration/gpu.
# MPI_RANKS with one count gives test <name>; with several (MPI_RANKS 2 4) the one
# executable becomes tests <name>_np2, <name>_np4.
# Every test binary's main (tests/support): exit code 77 when a test skipped,
# which SKIP_RETURN_CODE turns into a Skipped CTest test; a failure stays a failure.
if(NOT TARGET strata_test_main)
  add_library(strata_test_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/skip_aware_main.cpp
                                      ${PROJECT_SOURCE_DIR}/tests/support/test_main.cpp)
  target_include_directories(strata_test_main PUBLIC ${PROJECT_SOURCE_DIR}/tests/support)
  target_link_libraries(strata_test_main PUBLIC GTest::gtest PRIVATE strata_options)
endif()

function(strata_add_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LABELS;DEPS;ENV;MPI_RANKS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  if(NOT A_DEPS)
    set(A_DEPS strata)  # the whole library; a layer's tests may name just their layer
  endif()
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gtest strata_test_main strata_options)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  list(LENGTH A_MPI_RANKS _nrank_counts)
  set(_tests)
  if(_nrank_counts EQUAL 0)
    add_test(NAME ${name} COMMAND ${name})
    list(APPEND _tests ${name})
  else()
    foreach(np IN LISTS A_MPI_RANKS)
      set(_t ${name})
      if(_nrank_counts GREATER 1)
        set(_t ${name}_np${np})
      endif()
      add_test(NAME ${_t}
        COMMAND ${MPIEXEC_EXECUTABLE} --oversubscribe -np ${np} $<TARGET_FILE:${name}>)
      list(APPEND _tests ${_t})
    endforeach()
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 600)
  endif()
  foreach(t IN LISTS _tests)
    set_tests_properties(${t} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;STRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR};STRATA_BIN_DIR=${PROJECT_BINARY_DIR}/bin;${A_ENV}")
    # a test that skips (a GPU test without a device, a tool missing) is Skipped, not Passed
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endfunction()

# The counts the reliability and fuzz tests record (tests/reliability/figures_lib.sh).
set(STRATA_RELIABILITY_FIGURES ${PROJECT_BINARY_DIR}/reliability-figures.tsv)

# The test object store (Ceph RGW via scripts/rgw.sh); tests that need it say
# FIXTURES_REQUIRED rgw and read STRATA_TEST_S3_* from their environment.
set(STRATA_TEST_RGW_PORT 17480 CACHE STRING "Port of the test RGW")
set(STRATA_TEST_MON_PORT 16789 CACHE STRING "Port of the test Ceph monitor")
set(STRATA_TEST_CEPH_DIR "/tmp/strata-test-rgw-${STRATA_TEST_RGW_PORT}" CACHE PATH "Scratch dir of the test Ceph cluster")
