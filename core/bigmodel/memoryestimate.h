// `accel estimate-memory`: Accelerate's table of the largest layer, total size and
// training-with-Adam estimate per dtype, computed as Accelerate does from the float32 base model
// (transformers' AutoModel: no causal-LM head), plus inference memory for a batch and context
// (weights of the whole model, KV cache, activations) when the family's shapes are known.
#pragma once

#include "core/bigmodel/modelloader.h"
#include "core/bigmodel/quantizedsizes.h"
#include "core/common/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::bigmodel {

struct EstimateRow {
    std::string dtype;
    double largestLayer = 0;            // bytes
    double totalSize = 0;               // bytes, of the base model (Accelerate's "Total Size")
    double weights = 0;                 // bytes of the whole model, head included (inference)
    std::optional<double> trainingAdam; // bytes; none for int8/int4 (Accelerate prints N/A)
    // Inference at `batch` × `context` tokens (only when the model's shapes are known).
    std::optional<double> kvCache;
    std::optional<double> activations;
};

struct MemoryEstimate {
    std::string model;
    uint64_t parameters = 0;
    std::string baseModule;        // the module Accelerate's figures cover ("" = the whole model)
    uint64_t float32Total = 0;     // that module in float32
    uint64_t float32FullModel = 0; // the whole model (causal-LM head included) in float32
    uint64_t float32Largest = 0;
    std::vector<std::string> largestLayerNames;
    int64_t batch = 1;
    int64_t context = 0; // 0 when inference figures are not available
    std::vector<EstimateRow> rows;
};

// dtypes: float32, float16, bfloat16, fp8, int8, int4 (Accelerate's default: float32 float16 int8 int4).
// With `quantization` (a method set), one more row named after the method: the bytes the model holds
// quantized on load (quantizedsizes.h), what stays unquantized and the KV cache in float32.
Result<MemoryEstimate> estimateMemory(const LoadedModel &model, const std::vector<std::string> &dtypes, int64_t batch,
                                      std::optional<int64_t> context, const QuantizedLoad *quantization = nullptr);

// Accelerate's box-drawn table (title row spanning the columns, centred cells).
std::string renderBoxTable(const std::string &title, const std::vector<std::string> &headers,
                           const std::vector<std::vector<std::string>> &rows);

// The table `accelerate estimate-memory` prints, and our inference table under it.
std::string renderEstimate(const MemoryEstimate &estimate);

} // namespace accel::bigmodel
