// Context parallelism in the causal_lm recipe (parallelism_config cp_size; docs/finetune.md): the
// ranks of a cp group read the same samples and each runs the model on its part of every sequence
// (core/inference/ringattention.h: 2 x cp_size chunks, rank r keeping chunks r and
// 2 x cp_size - 1 - r; exact ring attention with cp_comm_strategy's exchange). The whole sequence
// is padded on the right to a multiple of 2 x cp_size (padding predicts nothing, and causal
// attention keeps it out of the real tokens). The loss is transformers' mean over every predicted
// token of the whole sequence: each rank's sum over its tokens times cp_size divided by the whole
// count, so that the mean over the group is the whole sequence's loss; the parameters are whole on
// every rank and each trained one's gradient (LoRA's adapters only, with LoRA) is averaged over the
// group as it is produced (before the data-parallel strategy sees it). What it cannot honour yet is
// refused by name. Includes libtorch.
#pragma once

#include "core/common/result.h"
#include "core/inference/causallm.h"
#include "core/inference/ringattention.h"
#include "core/worker/causallmrecipe.h"

#include <memory>
#include <string>
#include <utility>

namespace accel::runtime {
class Accelerator;
class Collectives;
} // namespace accel::runtime

namespace accel::worker {

class CausalLmContextParallel {
public:
    // Null without context parallelism (cp 1); an error naming each job setting refused with it.
    static Result<std::unique_ptr<CausalLmContextParallel>> create(runtime::Accelerator &accelerator,
                                                                   const JobSpec &job, const CausalLmSetup &setup);
    // After the parameters are registered: the model's forward takes this rank's part, each
    // trained parameter's gradient is averaged over the group. Refuses families without it.
    Result<void> attach(inference::CausalLM &model);
    // This rank's share of the loss of the batch ids / labels [B, T] (whole sequences; see above).
    at::Tensor loss(inference::CausalLM &model, const at::Tensor &ids, const at::Tensor &labels, int64_t pad) const;
    // For evaluation: this rank's summed loss and number of predicted tokens (summed over the
    // ranks they give the whole sequences').
    std::pair<double, double> sums(inference::CausalLM &model, const at::Tensor &ids, const at::Tensor &labels,
                                   int64_t pad) const;
    int size() const { return m_group->size; }
    std::string describe() const; // "cp 2, alltoall exchange, cp collectives: shared-memory"

private:
    explicit CausalLmContextParallel(runtime::Accelerator &accelerator) : m_accelerator(accelerator) {}
    // This rank's ids and next-token targets, and the whole count of predicted tokens.
    struct Part {
        at::Tensor ids, targets;
        int64_t predicted = 0;
    };
    Part part(const at::Tensor &ids, const at::Tensor &labels, int64_t pad) const;
    at::Tensor summedLoss(inference::CausalLM &model, const Part &part) const;

    runtime::Accelerator &m_accelerator;
    std::shared_ptr<runtime::Collectives> m_collectives;
    std::shared_ptr<inference::ContextParallelGroup> m_group;
};

} // namespace accel::worker
