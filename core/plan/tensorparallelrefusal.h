// The one wording of what the native tensor parallelism refuses on a model, read by both checks:
// core/plan's from config.json (checkTensorParallelModel: the CLI, the studio and accel-worker
// before anything loads) and the loaded model's own (core/inference: CausalLM::checkTensorParallel).
// Header-only and free of libtorch: accel_inference does not link accel_plan, and this needs nothing
// of it.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>

namespace accel::runtime {

// What the check knows of a model, from its config.json or from the loaded model.
struct TensorParallelModel {
    std::string modelType;
    bool hasPlan = true;           // false: a family without a tensor-parallel plan (GPT-2)
    bool fusedProjections = false; // Phi-3's fused qkv_proj and gate_up_proj
    bool mixtureOfExperts = false;
    int64_t vocabSize = 0;
    int64_t numHeads = 0;
    int64_t numKeyValueHeads = 0;
    int64_t intermediateSize = 0;
};

// "parallelism_config_tp_size N: ..." (Unsupported) for the first thing tensor parallelism over
// `size` ranks cannot split: an unknown model_type, a family without a plan, fused projections,
// mixtures of experts, a vocabulary (with vocabulary parallel) or head counts and a feed-forward
// width that `size` does not divide.
inline Result<void> refuseTensorParallel(const TensorParallelModel &m, int size, bool vocabParallel)
{
    const std::string tp = "parallelism_config_tp_size " + std::to_string(size);
    auto refuse = [&](const std::string &why) { return makeError(ErrorCode::Unsupported, tp + ": " + why); };
    const std::string notSplit = "' are not split by the native tensor parallelism; set tp_size: 1";
    if (m.modelType.empty())
        return refuse("the model has no config.json model_type, so its tensor-parallel plan is unknown; name a "
                      "model folder with its config.json");
    if (!m.hasPlan)
        return refuse("model_type '" + m.modelType +
                      "' has no tensor-parallel plan (transformers has none for it either); set tp_size: 1");
    if (m.fusedProjections)
        return refuse("the fused qkv_proj and gate_up_proj of model_type '" + m.modelType + notSplit);
    if (m.mixtureOfExperts)
        return refuse("the mixture-of-experts layers of model_type '" + m.modelType + notSplit);
    if (vocabParallel && m.vocabSize % size != 0)
        return refuse("vocab_size " + std::to_string(m.vocabSize) +
                      " (config.json) must divide by tp_size with training.vocab_parallel; choose a tp_size "
                      "that divides it or set training.vocab_parallel: false");
    if (m.numHeads % size != 0 || m.numKeyValueHeads % size != 0 || m.intermediateSize % size != 0)
        return refuse("num_attention_heads " + std::to_string(m.numHeads) + ", num_key_value_heads " +
                      std::to_string(m.numKeyValueHeads) + " and intermediate_size " +
                      std::to_string(m.intermediateSize) +
                      " must each divide by tp_size; choose a tp_size that divides all three");
    return {};
}

} // namespace accel::runtime
