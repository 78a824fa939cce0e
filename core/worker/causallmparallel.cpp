#include "core/worker/causallmparallel.h"

#include "core/runtime/accelerator.h"
#include "core/runtime/strategy/collectives.h"
#include "core/runtime/strategy/tensorparallellayout.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace accel::worker {

namespace {

using runtime::MeshDim;

} // namespace

Result<std::unique_ptr<CausalLmTensorParallel>> CausalLmTensorParallel::create(runtime::Accelerator &accelerator,
                                                                               const JobSpec &job,
                                                                               const CausalLmSetup &setup)
{
    const int size = accelerator.mesh().size(MeshDim::Tp);
    if (size <= 1)
        return std::unique_ptr<CausalLmTensorParallel>();
    const std::string tp = "parallelism_config_tp_size " + std::to_string(size);
    std::vector<std::string> refused;
    if (setup.lora)
        refused.push_back("lora.r " + std::to_string(setup.lora->rank) +
                          " (LoRA on split layers is not implemented; train the whole model or set tp_size: 1)");
    if (accelerator.mixedPrecision() == runtime::MixedPrecision::Fp8)
        refused.push_back("mixed_precision fp8 (FP8 layers are not split; use bf16 or no)");
    if (!refused.empty()) {
        std::string text;
        for (const std::string &r : refused)
            text += (text.empty() ? "" : "; ") + r;
        return makeError(ErrorCode::InvalidInput, tp + " with " + text, job.path);
    }
    std::unique_ptr<CausalLmTensorParallel> parallel(new CausalLmTensorParallel(accelerator));
    std::shared_ptr<runtime::Collectives> collectives = accelerator.meshCollectives(MeshDim::Tp);
    auto group = std::make_shared<inference::TensorParallelGroup>();
    group->rank = collectives->rank();
    group->size = collectives->size();
    group->allReduceSum = [collectives](at::Tensor &tensor) { collectives->allReduceSum(tensor); };
    group->allGather = [collectives](at::Tensor &output, const at::Tensor &input) {
        collectives->allGather(output, input);
    };
    parallel->m_group = std::move(group);
    parallel->m_transport = collectives->transport();
    return parallel;
}

int CausalLmTensorParallel::size() const
{
    return m_group->size;
}

Result<void> CausalLmTensorParallel::split(inference::CausalLM &model)
{
    std::map<std::string, std::vector<int64_t>> before;
    for (const auto &p : model.namedParameters())
        before[p.name] = p.parameter->value.sizes().vec();
    if (auto ok = model.splitForTensorParallel(m_group); !ok)
        return ok;
    for (const auto &p : model.namedParameters()) {
        const std::vector<int64_t> &whole = before[p.name], part = p.parameter->value.sizes().vec();
        if (part == whole)
            continue;
        m_splitNames.push_back(p.name);
        // The dimension split (checkpoints save the whole tensor: tensorparallellayout.h).
        for (size_t dim = 0; dim < part.size() && dim < whole.size(); ++dim) {
            if (part[dim] != whole[dim])
                m_splitDims[p.name] = int64_t(dim);
        }
    }
    return {};
}

void CausalLmTensorParallel::collectSplitTensors(inference::CausalLM &model)
{
    // Checkpoints: the split tensors by their state-dict names.
    std::map<const void *, int64_t> dims;
    for (const auto &p : model.namedParameters()) {
        if (const auto it = m_splitDims.find(p.name); it != m_splitDims.end())
            dims[p.parameter->value.unsafeGetTensorImpl()] = it->second;
    }
    auto layout = std::make_shared<runtime::TensorParallelLayout>();
    layout->rank = m_group->rank;
    layout->size = m_group->size;
    layout->allGather = m_group->allGather;
    auto &module = static_cast<torch::nn::Module &>(model);
    for (const auto &item : module.named_parameters()) {
        if (const auto it = dims.find(item.value().unsafeGetTensorImpl()); it != dims.end())
            layout->splitDims[item.key()] = it->second;
    }
    runtime::setTensorParallelLayout(module, std::move(layout));
    for (const auto &p : model.namedParameters()) {
        const at::Tensor &value = p.parameter->value;
        if (!value.requires_grad())
            continue;
        const bool split = std::find(m_splitNames.begin(), m_splitNames.end(), p.name) != m_splitNames.end();
        (split ? m_split : m_replicated).push_back(value);
    }
}

double CausalLmTensorParallel::clipGradients(double maxNorm)
{
    // FSDP / ZeRO: the sharding engine's norm counts each split parameter's pieces on every rank of
    // the tp group, the others' once (the layout tells it which).
    if (m_accelerator.strategyCopiesParameters())
        return m_accelerator.clipGradNorm(maxNorm);
    // Finishes the data-parallel gradient mean (no clipping below infinity).
    m_accelerator.clipGradNorm(INFINITY);
    // The replicated parameters once (their gradients are the same bits on every rank of the
    // group), every rank's part of the split ones: the same total on every rank.
    auto squares = [](const std::vector<at::Tensor> &tensors) {
        double sum = 0;
        for (const at::Tensor &p : tensors) {
            if (p.grad().defined())
                sum += p.grad().to(at::kDouble).pow(2).sum().item<double>();
        }
        return sum;
    };
    at::Tensor split = torch::tensor({squares(m_split)}, torch::kDouble);
    m_group->allReduceSum(split);
    const double total = std::sqrt(squares(m_replicated) + split.item<double>());
    const double coefficient = maxNorm / (total + 1e-6);
    if (coefficient < 1) {
        torch::NoGradGuard noGrad;
        for (const auto *tensors : {&m_split, &m_replicated}) {
            for (const at::Tensor &p : *tensors) {
                if (p.grad().defined())
                    p.grad().mul_(coefficient);
            }
        }
    }
    return total;
}

void CausalLmTensorParallel::gather(inference::CausalLM &model)
{
    torch::NoGradGuard noGrad;
    model.gatherTensorParallel();
}

} // namespace accel::worker
