# accel_add_test(NAME tst_x SOURCES a.cpp ... LIBS lib ... LABELS unit [process torch gui ssh slow bench]
#                [TIMEOUT s] [ARGS ...])
# Builds one Qt Test executable and registers it with CTest. Every test runs on the offscreen
# platform with a private HOME/XDG tree so that no test reads or writes the user's files.
# ACCEL_PYTHON (the project's Python environment's interpreter, cmake/AccelDependencies.cmake) is in every
# test's environment: the compat tests start it as the oracle (the real Hugging Face packages) and skip
# when it is missing.
function(accel_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE accel_defaults Qt6::Core Qt6::Test accel_testsupport ${T_LIBS})
  set_target_properties(${T_NAME} PROPERTIES AUTOMOC ON RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(home ${CMAKE_BINARY_DIR}/test-home/${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES
    LABELS "${T_LABELS}"
    TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen;HOME=${home};XDG_CACHE_HOME=${home}/.cache;XDG_CONFIG_HOME=${home}/.config;XDG_DATA_HOME=${home}/.local/share;HF_HOME=;ACCEL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;ACCEL_SOURCE_DIR=${CMAKE_SOURCE_DIR};ACCEL_PYTHON=${ACCEL_PYTHON};OMP_NUM_THREADS=1")
endfunction()
