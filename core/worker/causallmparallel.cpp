#include "core/worker/causallmparallel.h"

#include "core/inference/lora.h"
#include "core/plan/tensorparallelsplit.h"
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

inference::LoraAdaptable &adapted(inference::CausalLM &model, const std::string &name)
{
    return dynamic_cast<inference::LoraAdaptable &>(*model.findModule(name));
}

} // namespace

Result<std::unique_ptr<CausalLmTensorParallel>> CausalLmTensorParallel::create(runtime::Accelerator &accelerator,
                                                                               const JobSpec &job,
                                                                               const CausalLmSetup &setup)
{
    const int size = accelerator.mesh().size(MeshDim::Tp);
    if (size <= 1)
        return std::unique_ptr<CausalLmTensorParallel>();
    runtime::MeshJob meshJob; // refused as accel estimate-memory refuses it (core/plan/tensorparallelsplit.h)
    meshJob.tensorParallel = size;
    meshJob.fp8 = accelerator.mixedPrecision() == runtime::MixedPrecision::Fp8;
    if (auto ok = runtime::checkMeshJob(meshJob); !ok)
        return makeError(ok.error().code, ok.error().message, job.path);
    std::unique_ptr<CausalLmTensorParallel> parallel(new CausalLmTensorParallel(accelerator));
    parallel->m_lora = setup.lora;
    parallel->m_seed = job.seed;
    parallel->m_jobPath = job.path;
    std::shared_ptr<runtime::Collectives> collectives = accelerator.meshCollectives(MeshDim::Tp);
    auto group = std::make_shared<inference::TensorParallelGroup>();
    group->rank = collectives->rank();
    group->size = collectives->size();
    group->allReduceSum = [collectives](at::Tensor &tensor) { collectives->allReduceSum(tensor); };
    group->allGather = [collectives](at::Tensor &output, const at::Tensor &input) {
        collectives->allGather(output, input);
    };
    // Sequence parallel's reduce-scatter over the tokens (training.sequence_parallel, tensorparallel.h).
    group->reduceScatter = [collectives](at::Tensor &output, const at::Tensor &input) {
        collectives->reduceScatterSum(output, input);
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
    // The split made is the one table's (core/plan/tensorparallelsplit.h), from which accel
    // estimate-memory predicts a rank's bytes: a model split otherwise is a defect, not a run.
    const bool vocabParallel = model.tensorParallelOptions().vocabParallel;
    for (const auto &p : model.namedParameters()) {
        const auto it = m_splitDims.find(p.name);
        const int64_t made = it == m_splitDims.end() ? -1 : it->second;
        if (const int table = runtime::tensorParallelSplitDim(p.name, vocabParallel); made != table)
            return makeError(ErrorCode::Internal, "tensor parallelism split " + p.name + " along dimension " +
                                                      std::to_string(made) + ", the split table says " +
                                                      std::to_string(table) + " (-1: whole)");
    }
    return m_lora ? checkLora(model) : Result<void>();
}

Result<void> CausalLmTensorParallel::checkLora(inference::CausalLM &model)
{
    auto targets = inference::loraTargets(model, *m_lora);
    if (!targets)
        return makeError(ErrorCode::InvalidInput, targets.error().message, m_jobPath);
    for (const auto &[name, layer] : *targets) {
        const auto it = m_splitDims.find(name + ".weight");
        if (it != m_splitDims.end())
            (it->second == 0 ? m_columnLora : m_rowLora).insert(name);
    }
    if (m_rowLora.empty())
        return {};
    // The row-wise branch is merged into the weight for each forward: no dropout on its input, and
    // under mixed precision the merged weight's rounding would lose the adapter's small product.
    std::set<std::string> local;
    for (const std::string &name : m_rowLora)
        local.insert(name.substr(name.rfind('.') + 1));
    std::string layers;
    for (const std::string &name : local)
        layers += (layers.empty() ? "" : ", ") + name;
    std::vector<std::string> refused;
    if (m_lora->dropout > 0) {
        std::ostringstream dropout;
        dropout << m_lora->dropout;
        refused.push_back("lora.dropout " + dropout.str() + " (set lora.dropout: 0)");
    }
    if (m_accelerator.mixedPrecision() != runtime::MixedPrecision::No)
        refused.push_back(std::string("mixed_precision ") + mixedPrecisionName(m_accelerator.mixedPrecision()) +
                          " (set mixed_precision: no)");
    if (refused.empty())
        return {};
    std::string text;
    for (const std::string &r : refused)
        text += (text.empty() ? "" : "; ") + r;
    return makeError(ErrorCode::InvalidInput,
                     "parallelism_config_tp_size " + std::to_string(m_group->size) + " with LoRA on row-wise split " +
                         "layers (" + layers + ") and " + text +
                         ": their branch is merged into each rank's part of the weight, which neither drops the "
                         "branch's input out nor keeps its small product under a lower precision; or leave the "
                         "row-wise layers out of lora.target_modules",
                     m_jobPath);
}

void CausalLmTensorParallel::prepareLora(inference::CausalLM &model)
{
    // Row-wise layers' lora_A were drawn at their part's shape: drawn again as one process draws them.
    if (!m_rowLora.empty()) {
        auto drawn = inference::redrawLoraA(model, *m_lora, at::detail::createCPUGenerator(m_seed), m_rowLora,
                                            m_group->rank, m_group->size);
        if (!drawn) // the targets resolved in split()
            throw std::logic_error(drawn.error().message);
    }
    std::vector<at::Tensor> partial; // whole factors whose gradient holds this rank's terms only
    for (const std::string &name : m_columnLora) {
        m_splitDims[name + ".lora_B.weight"] = 0;
        m_splitNames.push_back(name + ".lora_B.weight");
        partial.push_back(adapted(model, name).loraA()->baseWeight()->value);
    }
    for (const std::string &name : m_rowLora) {
        m_splitDims[name + ".lora_A.weight"] = 1;
        m_splitNames.push_back(name + ".lora_A.weight");
        partial.push_back(adapted(model, name).loraB()->baseWeight()->value);
        inference::mergeLoraInEachForward(adapted(model, name));
    }
    // Summed over the group as autograd produces it (before the data-parallel strategy's hooks):
    // every rank runs the same graph, so the same order.
    const inference::TensorParallel group = m_group;
    for (at::Tensor &p : partial) {
        p.register_hook([group](const at::Tensor &gradient) {
            at::Tensor sum = gradient.contiguous().clone();
            group->allReduceSum(sum);
            return sum;
        });
    }
}

void CausalLmTensorParallel::collectSplitTensors(inference::CausalLM &model)
{
    if (m_lora)
        prepareLora(model);
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
    if (!m_lora)
        return;
    // The split LoRA factors, whole again (in name order on every rank).
    runtime::TensorParallelLayout layout;
    layout.rank = m_group->rank;
    layout.size = m_group->size;
    layout.allGather = m_group->allGather;
    runtime::NamedTensors factors;
    std::map<std::string, inference::Parameter *> parameters;
    for (const std::string &name : m_columnLora) {
        layout.splitDims[name + ".lora_B"] = 0;
        parameters[name + ".lora_B"] = adapted(model, name).loraB()->baseWeight();
    }
    for (const std::string &name : m_rowLora) {
        layout.splitDims[name + ".lora_A"] = 1;
        parameters[name + ".lora_A"] = adapted(model, name).loraA()->baseWeight();
        adapted(model, name).clearHooks(); // the base weight is whole again: no merged branch any more
    }
    for (const auto &[name, parameter] : parameters)
        factors[name] = parameter->value;
    runtime::gatherWhole(layout, factors);
    for (const auto &[name, whole] : factors)
        parameters[name]->value = whole;
}

} // namespace accel::worker
