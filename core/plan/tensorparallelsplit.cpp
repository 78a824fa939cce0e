#include "core/plan/tensorparallelsplit.h"

#include "core/bigmodel/dtype.h"
#include "core/plan/tensorparallelrefusal.h"

#include <algorithm>

namespace accel::runtime {

namespace {

enum class Style { Whole, Column, Row };

// The split of a Linear or Embedding module named `layer` (its last name component).
Style styleOf(const std::string &layer, bool vocabParallel)
{
    for (const char *column : {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"})
        if (layer == column)
            return Style::Column;
    if (layer == "o_proj" || layer == "down_proj")
        return Style::Row;
    // Vocabulary parallel: the embedding's rows, the head's output features (column-wise).
    if (vocabParallel && (layer == "embed_tokens" || layer == "lm_head"))
        return Style::Column;
    return Style::Whole;
}

std::string lastComponent(const std::string &name)
{
    const size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

} // namespace

int tensorParallelSplitDim(const std::string &name, bool vocabParallel)
{
    const std::string kind = lastComponent(name); // weight, bias
    std::string module = bigmodel::parentName(name);
    std::string factor; // lora_A, lora_B
    if (const std::string last = lastComponent(module); last == "lora_A" || last == "lora_B") {
        factor = last;
        module = bigmodel::parentName(module);
    }
    const Style style = styleOf(lastComponent(module), vocabParallel);
    if (style == Style::Whole)
        return -1;
    if (!factor.empty()) // a column-wise layer's lora_B rows, a row-wise layer's lora_A columns
        return kind != "weight"         ? -1
               : style == Style::Column ? (factor == "lora_B" ? 0 : -1)
                                        : (factor == "lora_A" ? 1 : -1);
    if (kind == "bias")
        return style == Style::Column ? 0 : -1; // a row-wise layer adds its whole bias after the sum
    return kind == "weight" ? (style == Style::Column ? 0 : 1) : -1;
}

Result<void> checkTensorParallelModel(const bigmodel::ModelConfig &c, int size, bool vocabParallel)
{
    TensorParallelModel model;
    model.modelType = c.modelType;
    model.hasPlan = c.modelType != "gpt2";
    model.fusedProjections = c.modelType == "phi3";
    model.mixtureOfExperts = c.numExperts > 0;
    model.vocabSize = c.vocabSize;
    model.numHeads = c.numHeads;
    model.numKeyValueHeads = c.numKeyValueHeads;
    model.intermediateSize = c.intermediateSize;
    return refuseTensorParallel(model, size, vocabParallel);
}

Result<void> checkMeshJob(const MeshJob &job)
{
    const std::string tp = "parallelism_config_tp_size " + std::to_string(job.tensorParallel);
    const std::string cp = "parallelism_config_cp_size " + std::to_string(job.contextParallel);
    if (job.tensorParallel > 1 && job.recipe != "causal_lm")
        return makeError(ErrorCode::InvalidInput, tp + ": recipe " + job.recipe +
                                                      " has no tensor-parallel split (the causal_lm recipe has, on "
                                                      "Llama-like models); set tp_size: 1");
    if (job.contextParallel > 1 && job.recipe != "causal_lm")
        return makeError(ErrorCode::InvalidInput, cp + ": recipe " + job.recipe +
                                                      " has no context-parallel attention (the causal_lm recipe has, "
                                                      "on Llama-like models); set cp_size: 1");
    for (const auto &[key, on] : {std::pair<std::string, bool>{"training.vocab_parallel", job.vocabParallel},
                                  std::pair<std::string, bool>{"training.sequence_parallel", job.sequenceParallel}}) {
        if (on && job.tensorParallel <= 1)
            return makeError(ErrorCode::InvalidInput,
                             key +
                                 ": true needs tensor parallelism, and this run has parallelism_config_tp_size 1; "
                                 "set tp_size to 2 or more, or " +
                                 key + ": false");
        if (on && job.contextParallel > 1)
            return makeError(ErrorCode::InvalidInput,
                             key + ": true with " + cp +
                                 " is not implemented (context parallelism computes its own loss over the whole "
                                 "vocabulary); set cp_size: 1 or " +
                                 key + ": false");
    }
    if (job.tensorParallel > 1 && job.fp8)
        return makeError(ErrorCode::InvalidInput,
                         tp + " with mixed_precision fp8 (FP8 layers are not split; use bf16 or no)");
    return {};
}

namespace {

// A tensor's share on one of `size` ranks: its split dimension divided (the check made it divide).
void addShare(TensorParallelShare &share, uint64_t elements, bigmodel::DType dtype, int dim, int size)
{
    const uint64_t held = dim >= 0 ? elements / uint64_t(size) : elements;
    const auto bytes = [dtype](uint64_t count) { return (count * uint64_t(bigmodel::dtypeBits(dtype)) + 7) / 8; };
    share.elements += held;
    share.storedBytes += bytes(held);
    share.wholeElements += elements;
    share.wholeStoredBytes += bytes(elements);
    if (dim >= 0)
        share.splitElements += elements;
}

} // namespace

TensorParallelShare tensorParallelShare(const bigmodel::ModelStructure &structure, int size, bool vocabParallel)
{
    TensorParallelShare share;
    size = std::max(1, size);
    for (const bigmodel::ModelTensor &tensor : structure.tensors()) {
        if (tensor.buffer || !tensor.aliasOf.empty()) // a tied head shares the (split) embedding
            continue;
        addShare(share, tensor.elements, tensor.dtype, tensorParallelSplitDim(tensor.name, vocabParallel), size);
    }
    return share;
}

TensorParallelShare loraTensorParallelShare(const bigmodel::ModelStructure &structure,
                                            const std::vector<std::string> &layers, int64_t r, int size,
                                            bool vocabParallel)
{
    TensorParallelShare share;
    size = std::max(1, size);
    for (const std::string &layer : layers) {
        const bigmodel::ModelTensor *weight = structure.tensor(layer + ".weight");
        if (!weight || weight->shape.size() != 2)
            continue;
        const uint64_t out = uint64_t(weight->shape[0]), in = uint64_t(weight->shape[1]);
        // The adapters train in float32.
        addShare(share, uint64_t(r) * in, bigmodel::DType::F32,
                 tensorParallelSplitDim(layer + ".lora_A.weight", vocabParallel), size);
        addShare(share, out * uint64_t(r), bigmodel::DType::F32,
                 tensorParallelSplitDim(layer + ".lora_B.weight", vocabParallel), size);
    }
    return share;
}

} // namespace accel::runtime
