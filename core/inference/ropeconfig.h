// RoPE settings of a config.json read as transformers 5 standardises them: rope_parameters
// (transformers 5) or rope_scaling with a top-level rope_theta (earlier versions), the family's
// default theta, Phi-3's top-level original_max_position_embeddings and its legacy "su" / "yarn"
// names for longrope. A rope_type this engine does not compute, a missing required key and
// per-layer-type parameters are errors naming the key; keys transformers does not read for the
// type are noted. Torch-free.
#pragma once

#include "core/common/result.h"
#include "core/inference/modelconfig.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <utility>
#include <vector>

namespace accel::inference {

struct RopeInput {
    std::string modelType;
    int64_t headDim = 0;
    int64_t rotaryDim = 0; // head_dim x partial_rotary_factor (Phi-3), else head_dim
    int64_t maxPositions = 0;
};

// Notes are (config key, text) pairs for keys read without effect.
Result<RopeConfig> parseRopeConfig(const nlohmann::json &config, const RopeInput &input, const std::string &path,
                                   std::vector<std::pair<std::string, std::string>> &notes);

// The rope types parseRopeConfig accepts ("default", "linear", ...).
const std::vector<std::string> &ropeTypes();

} // namespace accel::inference
