#include "core/worker/contextparallel.h"

#include "core/inference/llamamodel.h"
#include "core/runtime/accelerator.h"
#include "core/runtime/strategy/collectives.h"
#include "core/worker/lmdata.h"

#include <torch/torch.h>

namespace accel::worker {

namespace {

using runtime::MeshDim;

} // namespace

Result<std::unique_ptr<CausalLmContextParallel>> CausalLmContextParallel::create(runtime::Accelerator &accelerator,
                                                                                 const JobSpec &job,
                                                                                 const CausalLmSetup & /*setup*/)
{
    const runtime::DeviceMesh &mesh = accelerator.mesh();
    const int size = mesh.size(MeshDim::Cp);
    if (size <= 1)
        return std::unique_ptr<CausalLmContextParallel>();
    auto plan = runtime::shardingPlanFromEnvironment();
    if (!plan)
        return tl::unexpected(plan.error());
    const std::string cp = "parallelism_config_cp_size " + std::to_string(size);
    if (accelerator.mixedPrecision() == runtime::MixedPrecision::Fp8)
        return makeError(ErrorCode::InvalidInput,
                         cp + " with mixed_precision fp8 (FP8 with context parallelism is not implemented; use bf16 "
                              "or no)",
                         job.path);
    std::unique_ptr<CausalLmContextParallel> parallel(new CausalLmContextParallel(accelerator));
    std::shared_ptr<runtime::Collectives> collectives = accelerator.meshCollectives(MeshDim::Cp);
    auto group = std::make_shared<inference::ContextParallelGroup>();
    group->rank = collectives->rank();
    group->size = collectives->size();
    group->exchange = plan->contextParallelExchange == "alltoall" ? inference::KeyValueExchange::AllToAll
                                                                  : inference::KeyValueExchange::AllGather;
    group->allGather = [collectives](at::Tensor &output, const at::Tensor &input) {
        collectives->allGather(output, input);
    };
    group->reduceScatterSum = [collectives](at::Tensor &output, const at::Tensor &input) {
        collectives->reduceScatterSum(output, input);
    };
    parallel->m_collectives = std::move(collectives);
    parallel->m_group = std::move(group);
    return parallel;
}

Result<void> CausalLmContextParallel::attach(inference::CausalLM &model)
{
    auto *llama = dynamic_cast<inference::LlamaModel *>(&model);
    if (!llama)
        return makeError(ErrorCode::InvalidInput,
                         "parallelism_config_cp_size " + std::to_string(m_group->size) + ": model_type '" +
                             model.config().modelType +
                             "' has no context-parallel attention (Llama-like families have); set cp_size: 1");
    if (auto ok = llama->setContextParallel(m_group); !ok)
        return tl::unexpected(Error{ErrorCode::InvalidInput, ok.error().message, ok.error().context});
    // Every rank of the group holds the whole parameters and a part of the sequence: the gradient
    // of each is the mean over the group, taken as autograd produces it (before accumulation, so
    // before the data-parallel strategy's hooks). Every rank runs the same graph: the same order.
    std::shared_ptr<runtime::Collectives> collectives = m_collectives;
    const double size = double(m_group->size);
    for (auto &p : static_cast<torch::nn::Module &>(model).parameters()) {
        if (!p.requires_grad())
            continue;
        p.register_hook([collectives, size](const at::Tensor &gradient) {
            at::Tensor mean = gradient.contiguous().clone();
            collectives->allReduceSum(mean);
            return mean.div_(size);
        });
    }
    return {};
}

CausalLmContextParallel::Part CausalLmContextParallel::part(const at::Tensor &ids, const at::Tensor &labels,
                                                            int64_t pad) const
{
    // Position t predicts label t + 1 (the last position nothing); then padded on the right.
    const int64_t length = ids.size(1), multiple = 2 * m_group->size;
    const int64_t padded = (length + multiple - 1) / multiple * multiple;
    at::Tensor targets = at::full_like(labels, kIgnoreLabel);
    targets.narrow(1, 0, length - 1).copy_(labels.narrow(1, 1, length - 1));
    at::Tensor wholeIds = ids;
    if (padded > length) {
        const std::vector<int64_t> extra{ids.size(0), padded - length};
        wholeIds = at::cat({ids, at::full(extra, pad, ids.options())}, 1);
        targets = at::cat({targets, at::full(extra, int64_t(kIgnoreLabel), targets.options())}, 1);
    }
    Part part;
    part.predicted = (targets != kIgnoreLabel).sum().item<int64_t>();
    part.ids = inference::contextParallelPart(*m_group, wholeIds, 1);
    part.targets = inference::contextParallelPart(*m_group, targets, 1);
    return part;
}

at::Tensor CausalLmContextParallel::summedLoss(inference::CausalLM &model, const Part &part) const
{
    auto logits = model.forward(m_accelerator.toDevice(part.ids), nullptr);
    const int64_t vocab = logits.size(-1);
    namespace F = torch::nn::functional;
    return F::cross_entropy(logits.reshape({-1, vocab}).to(torch::kFloat),
                            m_accelerator.toDevice(part.targets).reshape({-1}),
                            F::CrossEntropyFuncOptions().ignore_index(kIgnoreLabel).reduction(torch::kSum));
}

at::Tensor CausalLmContextParallel::loss(inference::CausalLM &model, const at::Tensor &ids, const at::Tensor &labels,
                                         int64_t pad) const
{
    const Part p = part(ids, labels, pad);
    return summedLoss(model, p) * (double(m_group->size) / double(p.predicted));
}

std::pair<double, double> CausalLmContextParallel::sums(inference::CausalLM &model, const at::Tensor &ids,
                                                        const at::Tensor &labels, int64_t pad) const
{
    const Part p = part(ids, labels, pad);
    const double local = double((p.targets != kIgnoreLabel).sum().item<int64_t>());
    return {summedLoss(model, p).item<double>(), local};
}

std::string CausalLmContextParallel::describe() const
{
    return "cp " + std::to_string(m_group->size) + ", " +
           (m_group->exchange == inference::KeyValueExchange::AllToAll ? "alltoall" : "allgather") +
           " exchange, cp collectives: " + m_collectives->transport();
}

} // namespace accel::worker
