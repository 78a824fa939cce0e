// Quantized weights for a whole model, with Accelerate's BnbQuantizationConfig meanings:
//  - quantize on load (`--quantization int8|nf4|fp4`): every Linear layer of the loaded model
//    becomes bitsandbytes' int8 rows or 4-bit NF4 / FP4 blocks of 64, except the skipped modules
//    (skip_modules; by default Accelerate's get_keys_to_not_convert: the modules of tied weights and
//    the model's last top-level module, i.e. lm_head) and the modules kept in float32
//    (keep_in_fp32_modules: not quantized, their parameters cast to float32). A module name matches
//    an entry as _replace_with_bnb_layers matches it: the entry is the module's local or full name,
//    or the full name holds the entry followed by a dot. Offloaded layers stay unquantized (their
//    weights are read from disk for each forward), which is Accelerate's rule for 4-bit with a
//    custom map; for 8-bit it would quantize and offload them.
//  - pre-quantized checkpoints: config.json's quantization_config (bitsandbytes 8-bit and 4-bit
//    serialized, GPTQ, AWQ) names the format; each Linear whose tensors the checkpoint stores
//    quantized holds them as stored (zero-copy views of the mapping) and is computed from them.
// Weight-only int8 keeps the activations in float, so llm_int8_threshold (LLM.int8's outlier
// split of quantized activations) has nothing to act on. Every other quantization_config key is
// acted on, refused naming its value, or noted (quantization.cpp, checkQuantizationKeys).
#pragma once

#include "core/bigmodel/quantizedsizes.h"
#include "core/common/result.h"
#include "core/inference/int8kernel.h"
#include "core/inference/quantizationmethod.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::bigmodel {
class Checkpoint;
}

namespace accel::inference {

class CausalLM;
class QuantizedWeight;

// The method ("" for none), skip_modules (absent: Accelerate's default) and keep_in_fp32_modules:
// the same options the planner sizes with (core/bigmodel/quantizedsizes.h).
using QuantizationOptions = bigmodel::QuantizedLoad;

struct QuantizationReport {
    std::string method;          // "int8", "nf4", "fp4", "bitsandbytes-8bit", "gptq-4bit", ...
    size_t quantizedLayers = 0;  // Linear layers computed from quantized weights
    size_t skippedLayers = 0;    // Linear layers left in the compute dtype
    size_t float32Layers = 0;    // kept in float32
    size_t offloadedLayers = 0;  // offloaded, left unquantized
    uint64_t quantizedBytes = 0; // what their quantized weights hold
    uint64_t replacedBytes = 0;  // what the same weights hold in float32
    // With resident int8 layers: the kernel of their decode products (int8kernel.h).
    std::optional<Int8KernelChoice> int8Kernel;
    std::vector<std::string> warnings;
};

// Accelerate's get_keys_to_not_convert for the model: tied weights' modules and the last top-level
// module.
std::vector<std::string> defaultSkipModules(CausalLM &model);
// _replace_with_bnb_layers' rule for one module's full name.
bool moduleMatches(const std::string &fullName, const std::vector<std::string> &entries);

// The resident layers' int8 weights (quantized on load or stored so), in the model's order.
std::vector<const QuantizedWeight *> int8Layers(CausalLM &model);

// After dispatch: quantizes the resident Linear layers.
Result<QuantizationReport> quantizeModel(CausalLM &model, const QuantizationOptions &options);

// {"method", "quantized_layers", "skipped_layers", "float32_layers", "offloaded_layers",
// "quantized_bytes", "float32_bytes"} and, with int8 layers, "int8_kernel": {"kernel", "dtype",
// "reason", "ours_ms", "libtorch_ms" (null when libtorch refused the dtype), "measured_bytes"};
// null when nothing is quantized.
nlohmann::ordered_json quantizationJson(const QuantizationReport &report);

// A checkpoint's quantization_config, read before the model is dispatched: the Linear layers the
// checkpoint stores quantized take the stored tensors as their parameters. `config` is
// quantization_config's object; `path` names config.json.
Result<QuantizationReport> adoptQuantizedCheckpoint(CausalLM &model, const bigmodel::Checkpoint &checkpoint,
                                                    const nlohmann::json &config, const std::string &path);
// After dispatch: builds the resident layers' quantized weights from what was loaded.
Result<void> buildQuantizedLayers(CausalLM &model, QuantizationReport &report);

} // namespace accel::inference
