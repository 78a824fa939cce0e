# `accel hosts`: cluster hosts over SSH (launcher's accel_hosts: SshHost on libssh).
if(TARGET accel_hosts)
  list(APPEND ACCEL_CLI_SOURCES cli/cmd_hosts.cpp cli/cmd_hosts_launch.cpp cli/cmd_hosts_common.h cli/cmd_hosts_common.cpp
       cli/cmd_hosts_preflight.h cli/cmd_hosts_preflight.cpp cli/cmd_hosts_doctor.cpp cli/cmd_hosts_netprobe.cpp
       cli/cmd_hosts_install.cpp cli/hostsinstallscript.h cli/hostsinstallscript.cpp)
  # `accel hosts install` looks for packages in the source tree's dist/ too (packaging/package.sh).
  set_property(SOURCE cli/hostsinstallscript.cpp APPEND PROPERTY COMPILE_DEFINITIONS
               ACCEL_HOSTS_INSTALL_SOURCE_ROOT="${CMAKE_SOURCE_DIR}")
  # `accel slurm`: sbatch, squeue / sacct, scancel and following the run directory, over SSH.
  list(APPEND ACCEL_CLI_SOURCES cli/cmd_slurm.cpp cli/cmd_slurm_common.h cli/cmd_slurm_common.cpp cli/cmd_slurm_queue.cpp)
  list(APPEND ACCEL_CLI_LIBS accel_hosts)
  # `accel launch --hosts H1,H2 ...` is `accel hosts launch` (cmd_hosts_launch.cpp).
  set_property(SOURCE cli/cmd_launch.cpp APPEND PROPERTY COMPILE_DEFINITIONS ACCEL_CLI_HAVE_HOSTS)
  # `accel stop RECORD` of such a launch is `accel hosts stop RECORD`.
  set_property(SOURCE cli/cmd_stop.cpp APPEND PROPERTY COMPILE_DEFINITIONS ACCEL_CLI_HAVE_HOSTS)
  # `accel stack RUN` of a run supervised on another host runs accel stack there over SSH.
  set_property(SOURCE cli/cmd_stack.cpp APPEND PROPERTY COMPILE_DEFINITIONS ACCEL_CLI_HAVE_HOSTS)
endif()
