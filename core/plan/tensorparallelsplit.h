// Tensor parallelism's split of the Llama-like families as one table (no libtorch): which parameters
// the device mesh's tp group splits and along which dimension, rank r keeping the r-th of `size`
// equal parts. Megatron-LM's split as transformers' tensor-parallel plans apply it: q/k/v, gate and
// up column-wise (their rows, the output features, and their biases), o and down row-wise (their
// columns, the input features; the bias whole); with vocabulary parallel the rows of embed_tokens
// and lm_head (a tied head is the split embedding). LoRA on a split layer: lora_B split with a
// column-wise layer's rows, lora_A with a row-wise layer's columns, the other factor whole.
// Everything else (norms, the embeddings and head without vocabulary parallel) is whole on every
// rank. accel-worker checks the split its model made against this table
// (core/worker/causallmparallel.cpp); `accel estimate-memory` predicts a rank's bytes from it.
#pragma once

#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/modelstructure.h"
#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::runtime {

// The dimension of the parameter `name` (a state-dict name, "model.layers.0.self_attn.q_proj.weight",
// "....o_proj.lora_A.weight") the tp group splits, or -1: whole on every rank.
int tensorParallelSplitDim(const std::string &name, bool vocabParallel);

// "parallelism_config_tp_size N: ..." for what the native tensor parallelism refuses on a model
// before anything loads: families without a tensor-parallel plan (GPT-2), fused projections
// (Phi-3), mixtures of experts, head counts or a feed-forward width (with vocabulary parallel: a
// vocabulary) that `size` does not divide. Worded by refuseTensorParallel
// (tensorparallelrefusal.h), as the loaded model's own check is.
Result<void> checkTensorParallelModel(const bigmodel::ModelConfig &config, int size, bool vocabParallel);

// What a job cannot do on the mesh, refused before anything loads (accel-worker's recipes and the
// causal_lm recipe call it with what they know at that point): tp_size or cp_size above 1 outside
// the causal_lm recipe; training.vocab_parallel / training.sequence_parallel without tp_size above 1
// or with cp_size above 1; tp_size above 1 with mixed_precision fp8. Errors name the keys.
struct MeshJob {
    std::string recipe = "causal_lm";
    int tensorParallel = 1;
    int contextParallel = 1;
    bool vocabParallel = false;
    bool sequenceParallel = false;
    bool fp8 = false;
};
Result<void> checkMeshJob(const MeshJob &job);

// What one tp rank holds of a model's parameters (each storage once, buffers left out).
struct TensorParallelShare {
    uint64_t elements = 0;      // this rank's
    uint64_t storedBytes = 0;   // this rank's, in the tensors' own dtypes
    uint64_t wholeElements = 0; // the whole model's (one rank without tensor parallelism)
    uint64_t wholeStoredBytes = 0;
    uint64_t splitElements = 0; // of the whole model, in tensors the table splits
};
TensorParallelShare tensorParallelShare(const bigmodel::ModelStructure &structure, int size, bool vocabParallel);
// The same for LoRA's adapters of `layers` (Linear modules of `structure`) at rank `r`:
// lora_A [r, in] and lora_B [out, r] each.
TensorParallelShare loraTensorParallelShare(const bigmodel::ModelStructure &structure,
                                            const std::vector<std::string> &layers, int64_t r, int size,
                                            bool vocabParallel);

} // namespace accel::runtime
