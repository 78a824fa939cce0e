// A DeepSpeed JSON file (deepspeed_config_file) against the table of native keys (nativekeys.h):
// every key is one the native job acts on, refuses or notes, and any other key is refused by name.
// Also what the file's fp16.enabled / bf16.enabled make of the job's mixed precision, the way
// Accelerate's DeepSpeed integration reads them. The sharding plan reads the ZeRO settings itself;
// the keys it refuses (optimizer, scheduler, ...) are left to it.
#pragma once

#include "core/common/inputlimits.h"
#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace accel::config::native {

// The guard for a DeepSpeed file: a few KB of settings; a megabyte is far beyond any.
InputLimits deepSpeedFileLimits();

struct DeepSpeedFileCheck {
    // "no", "fp16", "bf16" or "fp8": the precision the job trains in with this file.
    std::string mixedPrecision;
    std::vector<std::string> notes; // keys accepted without effect, and a precision the file changed
};

// `requested`: the precision the job asks for without the file (the job file's
// training.mixed_precision, else ACCELERATE_MIXED_PRECISION, else "no"). Errors name the key, its
// value and `source`.
Result<DeepSpeedFileCheck> checkDeepSpeedFile(const nlohmann::json &root, const std::string &source,
                                              const std::string &requested);

// The same for a file on disk (through the input guard).
Result<DeepSpeedFileCheck> checkDeepSpeedFile(const std::string &path, const std::string &requested);

} // namespace accel::config::native
