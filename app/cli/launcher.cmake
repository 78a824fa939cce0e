# accel launch / runs / stop / tail / demo: the launcher's commands.
list(APPEND ACCEL_CLI_SOURCES
  cli/cmd_launch.cpp cli/cmd_launch_support.h cli/cmd_launch_support.cpp
  cli/cmd_runs.h cli/cmd_runs.cpp cli/cmd_runs_manage.cpp cli/cmd_stop.cpp cli/cmd_stack.cpp cli/stackreport.h cli/stackreport.cpp cli/cmd_tail.cpp cli/cmd_demo.cpp cli/cmd_launch_test.cpp
)
# accel_monitor: the supervisor samples the system and runs the detectors; tail --json streams.
list(APPEND ACCEL_CLI_LIBS accel_launcher accel_monitor accel_hardware)
# accel_trackers: the supervisor reads the script's TensorBoard, MLflow and trackio files (docs/trackers.md).
list(APPEND ACCEL_CLI_LIBS accel_trackers)
# The demo finds resources/jobs/demo-gpt.yaml in the source tree when run from a build folder.
set_source_files_properties(cli/cmd_demo.cpp PROPERTIES COMPILE_DEFINITIONS ACCEL_DEMO_SOURCE_ROOT="${CMAKE_SOURCE_DIR}")
# `accel launch --job` (also --dry-run) checks the job file as accel-worker reads it (Qt- and torch-free).
list(APPEND ACCEL_CLI_LIBS accel_worker_jobspec)
# accel stack finds py-spy in the project's Python environment (packaging/python-requirements.txt pins it).
set_source_files_properties(cli/cmd_stack.cpp PROPERTIES COMPILE_DEFINITIONS ACCEL_PYTHON_ENV="${ACCEL_PYTHON_ENV}")
