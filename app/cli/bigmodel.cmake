# Big-model planning commands: estimate-memory, device-map, inspect. They read headers and
# config.json only (accel_bigmodel, no libtorch).
list(APPEND ACCEL_CLI_SOURCES cli/cmd_estimate_memory.cpp cli/cmd_device_map.cpp cli/cmd_safetensors.cpp)
list(APPEND ACCEL_CLI_LIBS accel_bigmodel)
# accel merge-weights joins a sharded checkpoint (core/plan/shardedfolder.h); estimate-memory
# --config_file takes per-rank bytes from the runtime's own ShardingPlan (core/plan, no libtorch).
list(APPEND ACCEL_CLI_SOURCES cli/cmd_merge_weights.cpp)
list(APPEND ACCEL_CLI_LIBS accel_plan)
list(APPEND ACCEL_CLI_SOURCES cli/estimatesharding.h cli/estimatesharding.cpp cli/recipememory.h cli/recipememory.cpp)
