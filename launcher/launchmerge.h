// Merges `accel launch` flags with a cluster config the way `accelerate launch` does
// (facts 3.2), then records, as notes, every place where Accel Studio deliberately differs
// (it starts every rank itself, honours config keys Accelerate ignores, upper-cases the FP8
// backend). Pure: the host facts and the environment are inputs.
#pragma once

#include "core/common/result.h"
#include "launcher/launchsettings.h"

#include <map>
#include <optional>
#include <string>

namespace accel::launcher {

// A cluster config reduced to what the launcher merges: top-level scalars and the nested
// blocks (fsdp_config, deepspeed_config, fp8_config, dynamo_config, megatron_lm_config,
// mpirun_config, parallelism_config), values as Python would print them.
struct ConfigView {
    std::string path;
    ArgMap top;
    std::map<std::string, ArgMap> blocks;
};

// Facts about this machine that change the merge.
struct HostFacts {
    int physicalCores = 1;
    int acceleratorCount = 0; // visible GPUs (or other accelerators)
    // The torch version of the ranks' Python (or accel-worker's libtorch); nullopt: the merge asks
    // the ranks' interpreter (detectTorchVersion) when the launch uses torchrun's variables.
    std::optional<std::string> torchVersion;
};

struct LaunchRequest {
    std::map<std::string, std::string> flags; // flags typed on the command line; switches map to "true"
    ProgramSpec program;
    EnvMap environment; // the launcher's own environment (OMP_NUM_THREADS, MPI local sizes)
    std::string workingDirectory;
};

// Whether a config file is read and which: --config_file, else the default file when it exists
// and --cpu was not passed (Accelerate's rule, facts 3.2 step 2). Empty: no config.
std::string configFileToLoad(const LaunchRequest &request, const std::string &defaultPath, bool defaultExists);

Result<LaunchSettings> mergeLaunchSettings(const LaunchRequest &request, const std::optional<ConfigView> &config,
                                           const HostFacts &host);

// Physical cores and visible accelerators of this machine (/sys and /dev).
HostFacts detectHostFacts();

// The torch version the program will run: accel-worker's libtorch for a job, the installed torch
// package of the Python interpreter (PYTHON_EXEC or the program's) for a script; "" when unknown.
std::string detectTorchVersion(const ProgramSpec &program, const EnvMap &environment);

} // namespace accel::launcher
