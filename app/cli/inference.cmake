# accel generate / infer / merge-lora: argument checking only; the work is exec'd in accel-worker.
list(APPEND ACCEL_CLI_SOURCES cli/cmd_generate.cpp cli/cmd_infer.cpp cli/cmd_merge_lora.cpp)
