// Every key of a known family's config.json is accounted for before a model is built from it:
// read by the family (modelconfig.cpp), meaningless for a causal LM's forward pass (metadata,
// training-only settings, generation defaults that `accel generate` takes as its own options,
// heads the causal LM does not have), or refused by name: a key this engine does not know may
// change the computation, and settings it knows it does not implement (quantized weights,
// cross-attention) are errors. Keys a family carries that transformers 5 itself does not read for
// it (Gemma 2's hidden_act, a Llama's sliding_window, auto_map without trust_remote_code) are
// returned as notes. Torch-free.
#pragma once

#include "core/common/result.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <utility>
#include <vector>

namespace accel::inference {

// `config` is config.json's object, `modelType` one of bigmodel::supportedFamilies(); `path` names the file.
// The notes are (key, text) pairs.
using ConfigNotes = std::vector<std::pair<std::string, std::string>>;
Result<ConfigNotes> checkConfigKeys(const nlohmann::json &config, const std::string &modelType,
                                    const std::string &path);

} // namespace accel::inference
