# Big-model planning commands: estimate-memory, device-map, inspect. They read headers and
# config.json only (accel_bigmodel, no libtorch).
list(APPEND ACCEL_CLI_SOURCES cli/cmd_estimate_memory.cpp cli/cmd_device_map.cpp cli/cmd_safetensors.cpp)
list(APPEND ACCEL_CLI_LIBS accel_bigmodel)
# accel merge-weights: joins a sharded checkpoint (core/runtime/strategy/shardedfolder.h, no libtorch).
if(TARGET accel_runtime_base)
  list(APPEND ACCEL_CLI_SOURCES cli/cmd_merge_weights.cpp)
  list(APPEND ACCEL_CLI_LIBS accel_runtime_base)
  # estimate-memory --config_file: per-rank bytes from the runtime's own ShardingPlan.
  set_property(SOURCE cli/estimatesharding.cpp APPEND PROPERTY COMPILE_DEFINITIONS ACCEL_CLI_HAVE_SHARDING)
endif()
list(APPEND ACCEL_CLI_SOURCES cli/estimatesharding.h cli/estimatesharding.cpp cli/recipememory.h cli/recipememory.cpp)
