// The environment and command line of one rank: what `accelerate launch` (and torchrun, for the
// launchers that go through it) would give the process, plus Accel Studio's own ACCEL_RUN_DIR
// and ACCEL_METRICS_FILE. Pure functions of their inputs, so that what Accelerate exports can be
// checked one variable at a time.
#pragma once

#include "launcher/launchsettings.h"

#include <string>
#include <vector>

namespace accel::launcher {

struct RankPlacement {
    int localRank = 0;
    int restartCount = 0; // TORCHELASTIC_RESTART_COUNT
};

// Global rank of a local rank on this machine (node base offset + local rank).
int globalRank(const LaunchSettings &settings, int localRank);

// Whether ranks get torchrun's per-rank variables (RANK, LOCAL_RANK, ...). True for the torchrun
// and DeepSpeed launchers and for simple launches with more than one process.
bool usesRankVariables(const LaunchSettings &settings);

// `base` plus everything the launcher sets for this rank.
EnvMap buildRankEnvironment(const LaunchSettings &settings, const EnvMap &base, RankPlacement placement);

// The rank's argv: python3 -u SCRIPT args, python3 -u -m MODULE args, the program itself
// (--no_python), or accel-worker JOB. PYTHON_EXEC in `base` replaces the interpreter.
std::vector<std::string> buildRankCommand(const LaunchSettings &settings, const EnvMap &base);

// Entries of `env` that are new or different from `base`; removed entries map to no value and
// are not reported (the launcher never removes variables).
EnvMap environmentDifference(const EnvMap &base, const EnvMap &env);

// Python's rendering of a boolean ("True"/"False") from "true"/"1"/"yes"/... text.
std::string pythonBool(const std::string &text);
bool parseBool(const std::string &text, bool *ok = nullptr);

// The variable that masks devices for a distributed type (CUDA_VISIBLE_DEVICES, ZE_AFFINITY_MASK, ...).
std::string deviceMaskVariableFor(const std::string &distributedType);

} // namespace accel::launcher
