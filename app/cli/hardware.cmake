# `accel env`: the host report (core/hardware). The config section uses the config engineer's
# reader (core/config) when that library is built, else prints the raw file's entries.
list(APPEND ACCEL_CLI_SOURCES cli/cmd_env.cpp)
list(APPEND ACCEL_CLI_LIBS accel_hardware)
if(TARGET accel_config)
  list(APPEND ACCEL_CLI_LIBS accel_config)
  set_property(SOURCE cli/cmd_env.cpp APPEND PROPERTY COMPILE_DEFINITIONS ACCEL_ENV_WITH_CONFIG=1)
endif()
