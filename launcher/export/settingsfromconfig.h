// The launch settings `accel launch --config_file` would derive from an in-memory cluster config
// (no file needed): the config is reduced to the launcher's ConfigView and merged with no flags.
// The torchrun export uses it to list the variables launcher/envbuilder sets.
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"
#include "launcher/launchsettings.h"

namespace accel::launcher::exporting {

Result<LaunchSettings> settingsFromConfig(const config::ClusterConfig &config, const ProgramSpec &program);

// The variables Accelerate's launcher exports for every rank of a node (ACCELERATE_*, FSDP_*,
// device masks, OMP_NUM_THREADS...), without torchrun's own per-rank ones (RANK, MASTER_ADDR, ...)
// and without Accel Studio's run-directory variables.
EnvMap nodeExports(const LaunchSettings &settings);

} // namespace accel::launcher::exporting
