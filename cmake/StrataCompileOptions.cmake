add_library(strata_options INTERFACE)
target_compile_options(strata_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
if(STRATA_NATIVE)
  target_compile_options(strata_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
target_compile_definitions(strata_options INTERFACE EIGEN_DONT_PARALLELIZE_NOT_USED)
if(STRATA_SANITIZE)
  string(REPLACE "," ";" _san "${STRATA_SANITIZE}")
  foreach(s IN LISTS _san)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "STRATA_SANITIZE: unknown sanitizer '${s}' (use address, undefined, thread, leak)")
    endif()
  endforeach()
  target_compile_options(strata_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${STRATA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(strata_options INTERFACE -fsanitize=${STRATA_SANITIZE})
endif()
# Linked PRIVATE into every layer, so a static layer's export names it (LINK_ONLY:
# only the sanitizer link flags reach an embedder, never -march=native or -W...).
add_library(strata::options ALIAS strata_options)
set_target_properties(strata_options PROPERTIES EXPORT_NAME options)
install(TARGETS strata_options EXPORT strataTargets)
