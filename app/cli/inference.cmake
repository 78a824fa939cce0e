# accel generate / accel infer: argument checking only; the work is exec'd in accel-worker.
list(APPEND ACCEL_CLI_SOURCES cli/cmd_generate.cpp cli/cmd_infer.cpp)
