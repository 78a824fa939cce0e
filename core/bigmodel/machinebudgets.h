// Device budgets of this machine, the way get_max_memory() sees it: free memory of each GPU
// (taken from `accel env --json`, which probes the drivers) and the available system RAM.
#pragma once

#include "core/bigmodel/memorysize.h"
#include "core/common/result.h"

#include <string>

namespace accel::bigmodel {

// Reads GPU entries ({"index": i, "memory_free_bytes": n}) from anywhere in an `accel env --json`
// document; `path` names the file in errors.
Result<DeviceBudgets> gpuBudgetsFromEnvJson(const std::string &jsonText, const std::string &path);

// GPUs from the env JSON text (may be empty) followed by cpu = MemAvailable.
Result<DeviceBudgets> machineBudgets(const std::string &envJsonText, const std::string &path);

} // namespace accel::bigmodel
