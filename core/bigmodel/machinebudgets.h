// Device budgets the way get_max_memory() sees them: free memory of each GPU and the available
// system RAM. GPUs come from an `accel env --json` report (which probes the drivers; it may come
// from another host, e.g. over SSH, so its memory.available_bytes is used for cpu when present);
// otherwise cpu is this machine's MemAvailable.
#pragma once

#include "core/bigmodel/memorysize.h"
#include "core/common/result.h"

#include <cstdint>
#include <string>

namespace accel::bigmodel {

// The largest env report read: `accel env --json` writes a few KB (with every Python package,
// about 100 KB).
inline constexpr uint64_t kMaxEnvReportBytes = uint64_t(16) << 20;

// Reads GPU entries ({"index": i, "memory_free_bytes": n}) from anywhere in an `accel env --json`
// document; `path` names the file in errors.
Result<DeviceBudgets> gpuBudgetsFromEnvJson(const std::string &jsonText, const std::string &path);

// GPUs from the env JSON text (may be empty) followed by cpu = the report's available memory,
// else this machine's MemAvailable.
Result<DeviceBudgets> machineBudgets(const std::string &envJsonText, const std::string &path);

} // namespace accel::bigmodel
