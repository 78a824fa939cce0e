#include "core/runtime/strategy/collectives.h"

#include "core/runtime/collectiverecord.h"

namespace accel::runtime {

void Collectives::allReduceMax(torch::Tensor &tensor)
{
    if (size() == 1)
        return;
    torch::NoGradGuard noGrad;
    const torch::Tensor mine = tensor.contiguous().view({-1});
    torch::Tensor every = torch::empty({size() * mine.numel()}, mine.options());
    allGather(every, mine);
    tensor.copy_(every.view({size(), mine.numel()}).amax(0).view(tensor.sizes()));
}

ProcessGroupCollectives::ProcessGroupCollectives(c10::intrusive_ptr<c10d::Backend> group) : m_group(std::move(group)) {}

void ProcessGroupCollectives::allReduceSum(torch::Tensor &tensor)
{
    if (size() == 1)
        return;
    std::vector<torch::Tensor> tensors{tensor};
    const std::uint64_t sequence = collectiveIssued(CollectiveKind::AllReduce);
    auto work = m_group->allreduce(tensors);
    CollectiveWait waiting(CollectiveKind::AllReduce, sequence);
    work->wait();
}

void ProcessGroupCollectives::reduceScatterSum(torch::Tensor &output, const torch::Tensor &input)
{
    TORCH_CHECK(input.numel() == output.numel() * size(), "reduceScatterSum: input holds ", input.numel(),
                " elements, expected ", output.numel() * size());
    if (size() == 1) {
        output.copy_(input);
        return;
    }
    torch::Tensor in = input.contiguous();
    const std::uint64_t sequence = collectiveIssued(CollectiveKind::ReduceScatter);
    auto work = m_group->_reduce_scatter_base(output, in);
    CollectiveWait waiting(CollectiveKind::ReduceScatter, sequence);
    work->wait();
}

void ProcessGroupCollectives::allGather(torch::Tensor &output, const torch::Tensor &input)
{
    allGatherAsync(output, input)();
}

Collectives::Pending ProcessGroupCollectives::allGatherAsync(torch::Tensor output, torch::Tensor input)
{
    TORCH_CHECK(output.numel() == input.numel() * size(), "allGather: output holds ", output.numel(),
                " elements, expected ", input.numel() * size());
    if (size() == 1) {
        output.copy_(input);
        return [] {};
    }
    torch::Tensor in = input.contiguous();
    const std::uint64_t sequence = collectiveIssued(CollectiveKind::AllGather);
    auto work = m_group->_allgather_base(output, in);
    // The work keeps its tensors alive until it completes.
    return [work, output, in, sequence] {
        CollectiveWait waiting(CollectiveKind::AllGather, sequence);
        work->wait();
    };
}

void ProcessGroupCollectives::allReduceMax(torch::Tensor &tensor)
{
    if (size() == 1)
        return;
    std::vector<torch::Tensor> tensors{tensor};
    c10d::AllreduceOptions max;
    max.reduceOp = c10d::ReduceOp::MAX;
    const std::uint64_t sequence = collectiveIssued(CollectiveKind::AllReduce);
    auto work = m_group->allreduce(tensors, max);
    CollectiveWait waiting(CollectiveKind::AllReduce, sequence);
    work->wait();
}

Collectives::Pending ProcessGroupCollectives::allReduceMeanAsync(std::vector<torch::Tensor> tensors)
{
    if (tensors.empty())
        return [] {};
    torch::NoGradGuard noGrad;
    int64_t elements = 0;
    for (const auto &tensor : tensors)
        elements += tensor.numel();
    const auto options = tensors.front().options().requires_grad(false);
    torch::Tensor flat;
    for (auto it = m_staging->begin(); it != m_staging->end(); ++it) {
        if (it->numel() == elements && it->scalar_type() == options.dtype() && it->device() == options.device()) {
            flat = std::move(*it);
            m_staging->erase(it);
            break;
        }
    }
    if (!flat.defined())
        flat = torch::empty({elements}, options);
    int64_t offset = 0;
    for (const auto &tensor : tensors) {
        const int64_t n = tensor.numel();
        flat.narrow(0, offset, n).copy_(tensor.reshape({n}));
        offset += n;
    }
    // Divided before the sum, as DDP does over the process group.
    flat.div_(size());
    std::vector<torch::Tensor> list{flat};
    const std::uint64_t sequence = collectiveIssued(CollectiveKind::AllReduce);
    auto work = m_group->allreduce(list);
    return [work, flat, tensors = std::move(tensors), staging = m_staging, sequence] {
        {
            CollectiveWait waiting(CollectiveKind::AllReduce, sequence);
            work->wait();
        }
        torch::NoGradGuard noGrad;
        int64_t at = 0;
        for (const auto &tensor : tensors) {
            const int64_t n = tensor.numel();
            tensor.copy_(flat.narrow(0, at, n).view(tensor.sizes()));
            at += n;
        }
        staging->push_back(flat);
    };
}

} // namespace accel::runtime
