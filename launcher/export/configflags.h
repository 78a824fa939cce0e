// A cluster config as `accelerate launch` flags (facts 3.1 names) and back. The key <-> flag
// mapping is driven by core/config's schema visitors, so every key is handled once; the few keys
// whose flag name differs (use_cpu -> --cpu, fp8_config's amax_history_length -> --fp8_amax_history_len,
// ...) are listed in configflags.cpp.
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace accel::launcher::exporting {

// One flag: name without dashes; switch flags have no value.
struct FlagWord {
    std::string name;
    std::string value;
    bool isSwitch = false;
};

// The flags that reproduce `config` through `accelerate launch` (and `accel launch`). Keys with no
// launch flag (TPU lists, SageMaker, Megatron extras) are reported in `dropped`.
Result<std::vector<FlagWord>> configToFlags(const config::ClusterConfig &config,
                                            std::vector<std::string> *dropped = nullptr);

// The words "--name value" / "--name" of the flags.
std::vector<std::string> flagArguments(const std::vector<FlagWord> &flags);

// Overlays parsed flags (name -> value, switches "true") on `base`: typed by the schema, bad values
// name the flag. Without a mode flag and a base from a config file (`inferType`), the distributed
// type follows from the process counts (MULTI_CPU for several, else NO).
Result<config::ClusterConfig> flagsToConfig(const std::map<std::string, std::string> &flags, config::ClusterConfig base,
                                            bool inferType);

} // namespace accel::launcher::exporting
