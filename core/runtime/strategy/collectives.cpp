#include "core/runtime/strategy/collectives.h"

namespace accel::runtime {

ProcessGroupCollectives::ProcessGroupCollectives(c10::intrusive_ptr<c10d::Backend> group) : m_group(std::move(group)) {}

void ProcessGroupCollectives::allReduceSum(torch::Tensor &tensor)
{
    if (size() == 1)
        return;
    std::vector<torch::Tensor> tensors{tensor};
    m_group->allreduce(tensors)->wait();
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
    m_group->_reduce_scatter_base(output, in)->wait();
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
    auto work = m_group->_allgather_base(output, in);
    // The work keeps its tensors alive until it completes.
    return [work, output, in] { work->wait(); };
}

} // namespace accel::runtime
