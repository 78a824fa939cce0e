# `accel hosts`: cluster hosts over SSH (launcher's accel_hosts: SshHost on libssh).
if(TARGET accel_hosts)
  list(APPEND ACCEL_CLI_SOURCES cli/cmd_hosts.cpp cli/cmd_hosts_launch.cpp cli/cmd_hosts_common.h cli/cmd_hosts_common.cpp)
  list(APPEND ACCEL_CLI_LIBS accel_hosts)
endif()
