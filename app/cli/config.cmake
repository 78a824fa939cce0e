# accel config: questionnaire, default, show, validate, update, to-fsdp2, cluster.
list(APPEND ACCEL_CLI_SOURCES
  cli/cmd_config.cpp cli/cmd_config_files.cpp cli/cmd_config_questionnaire.cpp
  cli/cmd_config_cluster.cpp
)
list(APPEND ACCEL_CLI_LIBS accel_config accel_hardware nlohmann_json::nlohmann_json)
