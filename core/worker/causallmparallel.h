// Tensor parallelism in the causal_lm recipe (parallelism_config tp_size; docs/finetune.md): the
// settings it cannot honour yet refused by name before anything loads, the loaded model split over
// the device mesh's tp group (core/inference/tensorparallel.h), the global gradient norm for
// training.grad_clip over every rank's part, the split told to the checkpoints (which save it whole,
// core/runtime/strategy/tensorparallellayout.h), and the whole weights gathered back for the output
// folder. LoRA on split layers: a column-wise layer's lora_B is split with its rows (lora_A whole),
// a row-wise layer's lora_A with its columns (lora_B whole, its product merged into the weight for
// each forward: inference::mergeLoraInEachForward); the whole factors' gradients are partial per
// rank and summed over the tp group as autograd produces them. Includes libtorch.
#pragma once

#include "core/common/result.h"
#include "core/inference/causallm.h"
#include "core/worker/causallmrecipe.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace accel::runtime {
class Accelerator;
}

namespace accel::worker {

class CausalLmTensorParallel {
public:
    // Null without tensor parallelism (tp 1); an error naming each job setting refused with it.
    static Result<std::unique_ptr<CausalLmTensorParallel>> create(runtime::Accelerator &accelerator, const JobSpec &job,
                                                                  const CausalLmSetup &setup);
    // Splits the loaded model (before its parameters are registered with torch and LoRA attached).
    Result<void> split(inference::CausalLM &model);
    // After LoRA and registration: which registered tensors hold only this rank's part; LoRA's
    // initial values as one process draws them, its row-wise merge and gradient sums.
    void collectSplitTensors(inference::CausalLM &model);
    // training.grad_clip: the 2-norm over the whole model's gradients (the replicated parameters'
    // once, every rank's part of the split ones), gradients scaled to maxNorm when above. Every rank.
    double clipGradients(double maxNorm);
    // The whole weights (and LoRA factors) again on every rank (every rank calls it), before rank 0
    // writes the folder.
    void gather(inference::CausalLM &model);
    int size() const;
    std::string transport() const { return m_transport; } // the tp group's: "shared-memory" or "process-group"

private:
    CausalLmTensorParallel(runtime::Accelerator &accelerator) : m_accelerator(accelerator) {}
    Result<void> checkLora(inference::CausalLM &model);
    void prepareLora(inference::CausalLM &model);
    runtime::Accelerator &m_accelerator;
    std::optional<inference::LoraConfig> m_lora;
    uint64_t m_seed = 0;
    std::string m_jobPath;
    std::set<std::string> m_columnLora, m_rowLora; // adapted split layers by name
    inference::TensorParallel m_group;
    std::string m_transport;
    std::vector<std::string> m_splitNames;
    std::map<std::string, int64_t> m_splitDims;    // by the model's names
    std::vector<at::Tensor> m_split, m_replicated; // trained tensors
};

} // namespace accel::worker
