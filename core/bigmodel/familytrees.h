// The module trees transformers 5 builds for each known causal-LM family, computed from a parsed
// config.json: module names in registration order, class names, the tensors each module owns
// (buffers included) and the modules that own none (dropouts, activations). Used by
// buildModelStructure (modelfamilies.h); kept apart so that the config parser stays readable.
#pragma once

#include "core/bigmodel/modelfamilies.h"

namespace accel::bigmodel {

// The class-name prefix of a family's modules ("Llama", "Qwen2Moe", "GPT2").
std::string familyClassPrefix(const std::string &modelType);

// transformers' class for an activation name of config.json ("silu" -> "SiLUActivation").
std::string activationClassName(const std::string &activation);

// Adds the family's causal-LM tree under the root of `s` (which exists); parameters get `dtype`.
void buildFamilyTree(const ModelConfig &config, ModelStructure &s, DType dtype, MixtralLayout layout);

} // namespace accel::bigmodel
