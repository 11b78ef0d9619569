include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
get_property(_targets GLOBAL PROPERTY STRATA_LAYER_TARGETS)
get_property(_dirs GLOBAL PROPERTY STRATA_LAYER_DIRS)
install(TARGETS ${_targets} strata EXPORT strataTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(d IN LISTS _dirs)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${d} DESTINATION include/strata
    FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
endforeach()
install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/strataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/strataConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
