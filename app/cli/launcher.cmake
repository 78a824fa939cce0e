# accel launch / runs / stop / tail / demo: the launcher's commands.
list(APPEND ACCEL_CLI_SOURCES
  cli/cmd_launch.cpp cli/cmd_launch_support.h cli/cmd_launch_support.cpp
  cli/cmd_runs.cpp cli/cmd_stop.cpp cli/cmd_tail.cpp
)
list(APPEND ACCEL_CLI_LIBS accel_launcher)
