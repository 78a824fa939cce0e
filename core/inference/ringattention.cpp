#include "core/inference/ringattention.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace accel::inference {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

int64_t handle(const ContextParallelGroup &group)
{
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(&group));
}

const ContextParallelGroup &groupOf(AutogradContext *context)
{
    return *reinterpret_cast<const ContextParallelGroup *>(static_cast<intptr_t>(context->saved_data["group"].toInt()));
}

// Every rank's x, stacked [size, ...]: forward an all-gather, backward the sum of the gradients of
// this rank's copy over the ranks (a reduce-scatter).
struct GatherKeyValues : torch::autograd::Function<GatherKeyValues> {
    static at::Tensor forward(AutogradContext *context, const at::Tensor &x, int64_t group)
    {
        context->saved_data["group"] = group;
        const ContextParallelGroup &g = groupOf(context);
        at::Tensor output = at::empty({g.size * x.numel()}, x.options());
        g.allGather(output, x.contiguous().view(-1));
        std::vector<int64_t> sizes{g.size};
        for (int64_t size : x.sizes())
            sizes.push_back(size);
        return output.view(sizes);
    }
    static variable_list backward(AutogradContext *context, variable_list gradients)
    {
        const ContextParallelGroup &g = groupOf(context);
        const at::Tensor &gradient = gradients[0];
        at::Tensor output = at::empty({gradient.numel() / g.size}, gradient.options());
        g.reduceScatterSum(output, gradient.contiguous().view(-1));
        return {output.view(gradient.sizes().slice(1)), at::Tensor()};
    }
};

// x sent to rank + offset, the tensor of rank - offset received (torch's all-to-all rotation): an
// all-to-all whose only non-zero chunk of each rank is its destination's.
at::Tensor rotate(const ContextParallelGroup &g, const at::Tensor &x, int offset)
{
    const int destination = ((g.rank + offset) % g.size + g.size) % g.size;
    at::Tensor chunks = at::zeros({g.size, x.numel()}, x.options());
    chunks[destination].copy_(x.reshape({-1}));
    at::Tensor output = at::empty({x.numel()}, x.options());
    g.reduceScatterSum(output, chunks.view(-1));
    return output.view(x.sizes());
}

struct RotateKeyValues : torch::autograd::Function<RotateKeyValues> {
    static at::Tensor forward(AutogradContext *context, const at::Tensor &x, int64_t group)
    {
        context->saved_data["group"] = group;
        return rotate(groupOf(context), x, 1);
    }
    static variable_list backward(AutogradContext *context, variable_list gradients)
    {
        return {rotate(groupOf(context), gradients[0], -1), at::Tensor()};
    }
};

// The online softmax over key blocks: the running row maximum (a constant the result does not
// depend on, so it takes no gradient), the running sum of exponentials and the running output.
struct Accumulated {
    at::Tensor maximum, sum, output;
};

// Adds the block of keys k / values v [B, KVH, S, D] at positions keyPositions [S] to the
// accumulated attention of the grouped queries qg [B, KVH, G x T, D] at positions queryPositions [T].
void attendBlock(Accumulated &acc, const at::Tensor &qg, const at::Tensor &k, const at::Tensor &v,
                 const at::Tensor &queryPositions, const at::Tensor &keyPositions, const AttentionOptions &options,
                 double scale, int64_t groups)
{
    const int64_t batch = qg.size(0), kvHeads = qg.size(1), queries = queryPositions.size(0), keys = k.size(2);
    auto scores = at::matmul(qg, k.transpose(-1, -2)).to(at::kFloat) * scale;
    if (options.softcap > 0)
        scores = at::tanh(scores / options.softcap) * options.softcap;
    auto queryPos = queryPositions.unsqueeze(1), keyPos = keyPositions.unsqueeze(0);
    auto masked = keyPos > queryPos; // [T, S]
    if (options.window > 0)
        masked = masked.logical_or(keyPos <= queryPos - options.window);
    scores = scores.view({batch, kvHeads, groups, queries, keys})
                 .masked_fill(masked, -std::numeric_limits<float>::infinity())
                 .view({batch, kvHeads, groups * queries, keys});
    at::Tensor blockMax = std::get<0>(scores.detach().max(-1, /*keepdim=*/true));
    if (!acc.maximum.defined()) {
        // The first block is the rank's own: every query sees at least itself, the maximum is finite.
        acc.maximum = blockMax;
        auto weights = at::exp(scores - acc.maximum);
        acc.sum = weights.sum(-1, /*keepdim=*/true);
        acc.output = at::matmul(weights.to(v.scalar_type()), v).to(at::kFloat);
        return;
    }
    // Rows that see nothing of this block (maximum -inf) keep their running maximum.
    const at::Tensor maximum = at::maximum(acc.maximum, blockMax);
    const at::Tensor rescale = at::exp(acc.maximum - maximum);
    auto weights = at::exp(scores - maximum);
    acc.sum = acc.sum * rescale + weights.sum(-1, /*keepdim=*/true);
    acc.output = acc.output * rescale + at::matmul(weights.to(v.scalar_type()), v).to(at::kFloat);
    acc.maximum = maximum;
}

} // namespace

at::Tensor contextParallelPositions(const ContextParallelGroup &group, int64_t localTokens)
{
    const int64_t chunk = localTokens / 2;
    const auto longs = at::TensorOptions().dtype(at::kLong);
    const int64_t first = group.rank, second = 2 * group.size - 1 - group.rank;
    return at::cat({at::arange(first * chunk, (first + 1) * chunk, longs),
                    at::arange(second * chunk, (second + 1) * chunk, longs)});
}

at::Tensor contextParallelPart(const ContextParallelGroup &group, const at::Tensor &whole, int64_t dim)
{
    const int64_t chunk = whole.size(dim) / (2 * group.size);
    return at::cat({whole.narrow(dim, group.rank * chunk, chunk),
                    whole.narrow(dim, (2 * group.size - 1 - group.rank) * chunk, chunk)},
                   dim);
}

at::Tensor ringAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const AttentionOptions &options,
                         const ContextParallelGroup &group)
{
    if (options.dropout > 0)
        throw std::invalid_argument("context-parallel attention has no attention dropout");
    const int64_t batch = q.size(0), heads = q.size(1), tokens = q.size(2), dim = q.size(3);
    const int64_t kvHeads = k.size(1), groups = heads / kvHeads;
    const double scale = attentionScale(options, dim);
    const auto qg = q.reshape({batch, kvHeads, groups * tokens, dim});
    const at::Tensor own = contextParallelPositions(group, tokens).to(q.device());
    // Keys and values travel together: [2, B, KVH, T, D].
    at::Tensor keyValues = at::stack({k, v});
    Accumulated acc;
    if (group.exchange == KeyValueExchange::AllGather) {
        // [size, 2, B, KVH, T, D] -> keys and values of the whole sequence in rank order.
        const at::Tensor every = GatherKeyValues::apply(keyValues, handle(group));
        const at::Tensor joined =
            every.permute({1, 2, 3, 0, 4, 5}).reshape({2, batch, kvHeads, group.size * tokens, dim});
        std::vector<at::Tensor> positions;
        for (int r = 0; r < group.size; ++r) {
            ContextParallelGroup other = group;
            other.rank = r;
            positions.push_back(contextParallelPositions(other, tokens));
        }
        attendBlock(acc, qg, joined[0], joined[1], own, at::cat(positions).to(q.device()), options, scale, groups);
    } else {
        for (int step = 0; step < group.size; ++step) {
            ContextParallelGroup source = group; // the block held now started on rank - step
            source.rank = ((group.rank - step) % group.size + group.size) % group.size;
            attendBlock(acc, qg, keyValues[0], keyValues[1], own,
                        contextParallelPositions(source, tokens).to(q.device()), options, scale, groups);
            if (step + 1 < group.size)
                keyValues = RotateKeyValues::apply(keyValues, handle(group));
        }
    }
    return (acc.output / acc.sum).to(v.scalar_type()).view({batch, heads, tokens, dim});
}

} // namespace accel::inference
