// Accelerate's mixed_precision values, one enum and one list of names for the config, the launch
// flags, the questionnaire, the studio and the runtime's ACCELERATE_MIXED_PRECISION.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace accel {

enum class MixedPrecision { No, Fp16, Bf16, Fp8 };

// "no", "fp16", "bf16", "fp8": the enum's names, in its order.
const std::vector<std::string> &mixedPrecisionNames();
const char *mixedPrecisionName(MixedPrecision precision);
// The exact name (case as Accelerate writes it); nullopt for anything else.
std::optional<MixedPrecision> mixedPrecisionFromName(const std::string &name);

} // namespace accel
