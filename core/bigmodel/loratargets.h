// peft's target_modules rule, without libtorch: which layers a LoRA config adapts and how many
// parameters the adapters add. The LoRA code (core/inference/lora.cpp) attaches adapters by the
// same rule; `accel estimate-memory` counts them from a model's structure (checkpoint headers and
// config.json), so the prediction and the run adapt the same layers.
#pragma once

#include "core/bigmodel/modelstructure.h"
#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::bigmodel {

// The entry that takes every Linear / Conv1D layer but the output layer (lm_head).
inline constexpr const char *kLoraAllLinear = "all-linear";

// Whether the module named `name` (full dotted name) is selected by the target_modules entry
// `entry`: the names are equal or `name` ends with "." + entry. With all-linear, whether an
// adaptable layer is taken (every one but lm_head).
bool loraEntryMatches(const std::string &name, const std::string &entry);
bool loraAllLinearTakes(const std::string &name);

struct LoraCount {
    std::vector<std::string> layers; // adapted layers, full names, in the structure's order
    uint64_t parameters = 0;         // r * (in + out) for each: lora_A [r, in] and lora_B [out, r]
};

// The layers `targets` adapts in `structure` (Linear and GPT-2's Conv1D are adaptable) and the
// adapters' parameter count at rank `rank`. Errors name the entry that matches nothing or a layer
// LoRA cannot adapt, with the adaptable layers' names (as the run refuses them).
Result<LoraCount> countLoraParameters(const ModelStructure &structure, const std::vector<std::string> &targets,
                                      int64_t rank);

} // namespace accel::bigmodel
