// What a model holds once its Linear layers are quantized on load (`--quantization int8|nf4|fp4`),
// without libtorch, so that `accel device-map`, `accel estimate-memory` and the studio plan with the
// bytes the inference engine keeps (core/inference/quantization.h quantizes by the same rules):
//  - the layers quantized are the Linear and GPT-2 Conv1D modules, except those that match
//    skip_modules (default: Accelerate's get_keys_to_not_convert, the modules of tied weights and the
//    model's last top-level module) or keep_in_fp32_modules, matched as Accelerate's
//    _replace_with_bnb_layers matches them (bnbModuleMatches);
//  - a quantized weight [out, in] holds bitsandbytes' layout (bnbformats.h): int8, CB int8 [out, in]
//    plus SCB float32 [out] (one absolute maximum per output row); 4-bit NF4 / FP4, the indices two to
//    a byte (ceil(out * in / 2) bytes), one float32 absmax per block of 64 elements of the row-major
//    weight (a trailing partial block has its own) and the 16-value float32 code (quant_map);
//  - biases of quantized layers and every other tensor keep the compute dtype (the planner's dtype,
//    as stored without one); parameters whose name holds a keep_in_fp32_modules entry count 4 bytes
//    per element (the engine casts them to float32).
// Accelerate's own planner (get_quantized_model_device_map) counts every floating tensor at the
// target dtype (1 byte for int8, half a byte for 4-bit) and no scales; these are the bytes held.
#pragma once

#include "core/bigmodel/modelstructure.h"
#include "core/common/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::bigmodel {

struct QuantizedLoad {
    std::string method;                                  // "int8", "nf4", "fp4"
    std::optional<std::vector<std::string>> skipModules; // absent: defaultSkipModules()
    std::vector<std::string> keepInFp32Modules;
};

// _replace_with_bnb_layers' rule: an entry is the module's local or full name, or the full name
// holds the entry followed by a dot.
bool bnbModuleMatches(const std::string &fullName, const std::vector<std::string> &entries);

// Accelerate's get_keys_to_not_convert over the structure: the modules of tied weights and the root's
// last child (the output head).
std::vector<std::string> defaultSkipModules(const ModelStructure &structure);

// "A,B" as the command lines spell skip_modules / keep_in_fp32_modules (empty names dropped: ""
// is the empty list).
std::vector<std::string> splitModuleList(const std::string &text);
// The command-line options: a method (or "" for none), the two lists when given. Errors name the
// option and what is valid.
Result<QuantizedLoad> parseQuantizedLoad(const std::string &method, const std::optional<std::string> &skipModules,
                                         const std::optional<std::string> &keepInFp32Modules);

// Bytes of one weight of `outFeatures` rows and `elements` elements in `method`'s layout.
uint64_t quantizedWeightBytes(const std::string &method, uint64_t elements, uint64_t outFeatures);

// The method is one of the quantization methods, and the structure names its module classes (a model
// without config.json of a known family cannot say which modules are Linear layers).
Result<void> checkQuantizedLoad(const ModelStructure &structure, const QuantizedLoad &load);

// The quantized layers of a structure and the bytes of each tensor under the load.
class QuantizedSizer {
public:
    QuantizedSizer(const ModelStructure &structure, const QuantizedLoad &load);
    // The tensor's bytes when its module is quantized or it is kept in float32; nullopt otherwise
    // (the caller counts it at the compute dtype).
    std::optional<uint64_t> bytesOf(const ModelTensor &tensor) const;
    // Modules quantized, sorted by name.
    const std::vector<std::string> &quantizedModules() const { return m_quantized; }
    const QuantizedLoad &load() const { return m_load; }

private:
    const ModelStructure &m_structure;
    QuantizedLoad m_load;
    std::vector<std::string> m_skip;
    std::vector<std::string> m_quantized;
};

} // namespace accel::bigmodel
