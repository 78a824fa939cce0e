// Tensor parallelism in the causal_lm recipe (parallelism_config tp_size; docs/finetune.md): the
// settings it cannot honour yet refused by name before anything loads, the loaded model split over
// the device mesh's tp group (core/inference/tensorparallel.h), the global gradient norm for
// training.grad_clip over every rank's part, the split told to the checkpoints (which save it whole,
// core/runtime/strategy/tensorparallellayout.h), and the whole weights gathered back for the output
// folder. Includes libtorch.
#pragma once

#include "core/common/result.h"
#include "core/inference/causallm.h"
#include "core/worker/causallmrecipe.h"

#include <map>
#include <memory>
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
    // Splits the loaded model (before its parameters are registered with torch).
    Result<void> split(inference::CausalLM &model);
    // After registration: which registered tensors hold only this rank's part.
    void collectSplitTensors(inference::CausalLM &model);
    // training.grad_clip: the 2-norm over the whole model's gradients (the replicated parameters'
    // once, every rank's part of the split ones), gradients scaled to maxNorm when above. Every rank.
    double clipGradients(double maxNorm);
    // The whole weights again on every rank (every rank calls it), before rank 0 writes the folder.
    void gather(inference::CausalLM &model);
    int size() const;
    std::string transport() const { return m_transport; } // the tp group's: "shared-memory" or "process-group"

private:
    CausalLmTensorParallel(runtime::Accelerator &accelerator) : m_accelerator(accelerator) {}
    runtime::Accelerator &m_accelerator;
    inference::TensorParallel m_group;
    std::string m_transport;
    std::vector<std::string> m_splitNames;
    std::map<std::string, int64_t> m_splitDims;    // by the model's names
    std::vector<at::Tensor> m_split, m_replicated; // trained tensors
};

} // namespace accel::worker
