# The installed package: the layer libraries, exported as strata::<layer> and
# strata::strata (the names the build tree's aliases have), the public headers
# under <prefix>/include/strata/ (cmake/StrataInstallHeaders.cmake decides which),
# and strataConfig.cmake, which finds every dependency the exported targets name.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
get_property(_targets GLOBAL PROPERTY STRATA_LAYER_TARGETS)
install(TARGETS ${_targets} strata EXPORT strataTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# the one-line launcher beside the programs it launches (docs/launch.md)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/strata-mpirun DESTINATION ${CMAKE_INSTALL_BINDIR})

install(CODE "set(STRATA_HEADER_ROOTS \"${PROJECT_SOURCE_DIR}\")
set(STRATA_UMBRELLA \"${PROJECT_SOURCE_DIR}/include/strata/strata.h\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/StrataInstallHeaders.cmake)

install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/strataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/strataConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
