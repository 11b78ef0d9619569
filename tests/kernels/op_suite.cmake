# The sources of the op suite (tests/kernels/op_suite.h), included by the cpu
# binary here and the cuda binary in tests/kernels/cuda/, so both walk the same cases.
file(GLOB STRATA_OP_SUITE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cases_*.cpp)
list(APPEND STRATA_OP_SUITE_SOURCES ${CMAKE_CURRENT_LIST_DIR}/op_suite.cpp ${CMAKE_CURRENT_LIST_DIR}/op_harness.cpp
  ${CMAKE_CURRENT_LIST_DIR}/op_placement.cpp)
