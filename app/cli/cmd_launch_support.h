// The parts of `accel launch` between argument parsing and the supervisor: turning the parsed
// flags into LaunchSettings (config file, merge, rendezvous port, run directory path),
// creating the run directory with its manifest, and --detach.
#pragma once

#include "app/cli/argparser.h"
#include "core/common/programs.h"
#include "core/common/result.h"
#include "launcher/launchsettings.h"
#include "launcher/ports.h"
#include "launcher/rundirectory.h"

#include <memory>
#include <string>

namespace accel::cli {

struct PreparedLaunch {
    launcher::LaunchSettings settings;
    launcher::EnvMap baseEnvironment;
    std::string configPath; // empty: no config file
    std::string configYaml; // the config as Accelerate writes it
    std::string runName;
    // The rendezvous port held for rank 0 of a native job on this machine (launcher/ports.h).
    std::shared_ptr<launcher::PortReservation> storePort;
};

Result<PreparedLaunch> prepareLaunch(const ArgParser &parser);
Result<launcher::RunDirectory> createRunDirectory(const PreparedLaunch &prepared, int argc, char **argv);
// Starts the supervisor in a new session in the background and prints the run id.
int detachSupervisor(int argc, char **argv, const launcher::LaunchSettings &settings, bool json);
// Fails (ErrorCode::Unsupported, exit 1) when the worker at `path` is not an executable file:
// "PATH not found: this build has no libtorch runtime (accel-worker)".
Result<void> checkWorkerProgram(const std::string &path);
launcher::EnvMap currentEnvironment();

} // namespace accel::cli
