// A model ready for inference: config.json read, the family's module tree built, the checkpoint
// (single or sharded safetensors) mapped and dispatched. Torch-light: the tree is reached through
// causallm.h from torch code.
#pragma once

#include "core/common/result.h"
#include "core/inference/dispatch.h"
#include "core/inference/modelconfig.h"
#include "core/inference/promptkernel.h"
#include "core/inference/quantization.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accel::inference {

class CausalLM;

struct LoadOptions {
    // "" or "cpu" puts everything on the CPU; auto, balanced, balanced_low_0 and sequential plan
    // with core/bigmodel's infer_auto_device_map as `accel device-map` does; otherwise a JSON
    // object or a file holding one (devicemapspec.h).
    std::string deviceMap;
    std::string maxMemory;    // for a strategy: "cpu=8GiB,disk=100GiB" style budgets (else this machine's)
    DispatchOptions dispatch; // deviceMap here is used when the string above is empty
    int threads = 0;          // intra-op threads; 0 keeps libtorch's default
    // A LoRA adapter folder in peft's layout (lora.h), applied after the base is dispatched; "" = none.
    std::string adapterDir;
    // Quantize on load (int8, nf4, fp4), with skip_modules / keep_in_fp32_modules (quantization.h).
    QuantizationOptions quantization;
};

class InferenceModel {
public:
    static Result<std::unique_ptr<InferenceModel>> load(const std::string &modelDir, const LoadOptions &options = {});
    ~InferenceModel();

    const ModelConfig &config() const;
    const DispatchReport &report() const { return m_report; }
    const DeviceMap &deviceMap() const { return m_deviceMap; }
    const std::string &modelDir() const { return m_modelDir; }
    // Everything loading said (the planner, config.json's settings, the dispatcher), for --json.
    const std::vector<std::string> &warnings() const { return m_warnings; }
    // The layers the adapter (LoadOptions::adapterDir) adapts; empty without one.
    const std::vector<std::string> &adaptedLayers() const { return m_adapted; }
    // Quantized layers: quantized on load or stored so in the checkpoint (method "" when neither).
    const QuantizationReport &quantization() const { return m_quantization; }
    // With float32 layers on the CPU: up to how many rows of x their products take our kernels,
    // chosen by measurement at the process's first such load (promptkernel.h); none without them.
    const std::optional<PromptKernelChoice> &promptKernel() const { return m_promptKernel; }
    CausalLM &lm() { return *m_lm; }

private:
    InferenceModel() = default;
    struct Storage;
    std::unique_ptr<Storage> m_storage; // the checkpoint's mappings
    std::unique_ptr<CausalLM> m_lm;
    DispatchReport m_report;
    DeviceMap m_deviceMap;
    std::string m_modelDir;
    std::vector<std::string> m_warnings;
    std::vector<std::string> m_adapted;
    QuantizationReport m_quantization;
    std::optional<PromptKernelChoice> m_promptKernel;
};

} // namespace accel::inference
