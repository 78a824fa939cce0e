// Every key of a known family's config.json is accounted for before a model is built from it:
// read by the family (modelconfig.cpp), meaningless for a causal LM's forward pass (metadata,
// training-only settings, generation defaults that `accel generate` takes as its own options,
// heads the causal LM does not have), or refused by name: a key this engine does not know may
// change the computation, and settings it knows it does not implement (quantized weights,
// remote code, cross-attention) are errors. Torch-free.
#pragma once

#include "core/common/result.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace accel::inference {

// `config` is config.json's object, `modelType` one of supportedModelTypes(); `path` names the file.
Result<void> checkConfigKeys(const nlohmann::json &config, const std::string &modelType, const std::string &path);

} // namespace accel::inference
