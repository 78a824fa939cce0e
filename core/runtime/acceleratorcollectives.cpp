// Accelerator's collectives (gather, padding, reduce, broadcast, barrier) and the debug-mode
// shape check that runs before them.
#include "core/runtime/accelerator_p.h"

#include "core/common/accelerateenv.h"

#include <sstream>

namespace accel::runtime {

void Accelerator::Private::checkShapes(const torch::Tensor &tensor, const char *operation)
{
    if (!env.debugMode || !group)
        return;
    constexpr int64_t maxDims = 8;
    auto shape = torch::full({maxDims + 1}, -1, torch::kInt64);
    shape[0] = tensor.dim();
    for (int64_t i = 0; i < std::min<int64_t>(tensor.dim(), maxDims); ++i)
        shape[i + 1] = tensor.size(i);
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < env.worldSize; ++r)
        out[0].push_back(torch::empty_like(shape));
    std::vector<torch::Tensor> in{shape};
    runWork(CollectiveKind::AllGather, [&] { return group->allgather(out, in); });
    std::ostringstream text;
    bool mismatch = false;
    for (int r = 0; r < env.worldSize; ++r) {
        if (!out[0][size_t(r)].equal(shape))
            mismatch = true;
        const auto s = out[0][size_t(r)];
        text << "\n  rank " << r << ": [";
        for (int64_t i = 0; i < std::min<int64_t>(s[0].item<int64_t>(), maxDims); ++i)
            text << (i ? ", " : "") << s[i + 1].item<int64_t>();
        text << "]";
    }
    if (mismatch)
        throw std::runtime_error(std::string(operation) + ": tensor shapes differ across processes (" +
                                 accelerateenv::kDebugMode + "):" + text.str());
}

at::Tensor Accelerator::gather(const at::Tensor &tensorIn)
{
    torch::Tensor tensor = tensorIn.dim() == 0 ? tensorIn.reshape({1}) : tensorIn.contiguous();
    if (!d->group)
        return tensor.clone();
    d->checkShapes(tensor, "gather");
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < d->env.worldSize; ++r)
        out[0].push_back(torch::empty_like(tensor));
    std::vector<torch::Tensor> in{tensor};
    runWork(CollectiveKind::AllGather, [&] { return d->group->allgather(out, in); });
    return torch::cat(out[0], 0);
}

at::Tensor Accelerator::gatherForMetrics(const at::Tensor &tensor)
{
    torch::Tensor all = gather(tensor);
    auto loader = d->activeLoader();
    if (loader && loader->endOfDataLoader() && loader->remainder() > 0)
        return all.slice(0, 0, std::min<int64_t>(loader->remainder(), all.size(0)));
    return all;
}

at::Tensor Accelerator::padAcrossProcesses(const at::Tensor &tensor, int64_t dim, double padIndex, bool padFirst)
{
    if (!d->group || tensor.dim() == 0)
        return tensor;
    if (dim < 0)
        dim += tensor.dim();
    auto sizes = gather(torch::tensor({tensor.size(dim)}, torch::kInt64));
    const int64_t maxSize = sizes.max().item<int64_t>();
    if (maxSize == tensor.size(dim))
        return tensor;
    auto shape = tensor.sizes().vec();
    shape[size_t(dim)] = maxSize;
    auto padded = torch::full(shape, padIndex, tensor.options());
    const int64_t start = padFirst ? maxSize - tensor.size(dim) : 0;
    padded.narrow(dim, start, tensor.size(dim)).copy_(tensor);
    return padded;
}

at::Tensor Accelerator::reduce(const at::Tensor &tensorIn, ReduceOp op)
{
    torch::Tensor tensor = tensorIn.clone().contiguous();
    if (!d->group)
        return tensor;
    d->checkShapes(tensor, "reduce");
    std::vector<torch::Tensor> in{tensor};
    c10d::AllreduceOptions reduceOptions;
    reduceOptions.reduceOp = op == ReduceOp::Max ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
    runWork(CollectiveKind::AllReduce, [&] { return d->group->allreduce(in, reduceOptions); });
    if (op == ReduceOp::Mean)
        tensor.div_(d->env.worldSize);
    return tensor;
}

void Accelerator::broadcast(at::Tensor &tensor, int sourceRank)
{
    if (!d->group)
        return;
    d->checkShapes(tensor, "broadcast");
    torch::NoGradGuard noGrad;
    torch::Tensor buffer = tensor.is_contiguous() ? tensor.detach() : tensor.detach().contiguous();
    std::vector<torch::Tensor> in{buffer};
    c10d::BroadcastOptions broadcastOptions;
    broadcastOptions.rootRank = sourceRank;
    runWork(CollectiveKind::Broadcast, [&] { return d->group->broadcast(in, broadcastOptions); });
    if (!buffer.is_same(tensor))
        tensor.detach().copy_(buffer);
}

void Accelerator::waitForEveryone()
{
    if (!d->group)
        return;
    runWork(CollectiveKind::Barrier, [&] { return d->group->barrier(); });
}

} // namespace accel::runtime
