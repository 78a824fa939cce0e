#include "core/inference/layers.h"

#include "core/inference/bf16gemv.h"
#include "core/inference/floatgemv.h"
#include "core/inference/gemvcolumns.h"
#include "core/inference/promptkernel.h"
#include "core/inference/quantizedweight.h"

#include <ATen/core/grad_mode.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace accel::inference {

void DeviceModule::setExecutionDevice(const at::Device &device, bool recursive)
{
    m_device = device;
    if (recursive)
        setExecutionDevices(*this, device);
}

void setExecutionDevices(Module &root, const at::Device &device)
{
    if (auto *dm = dynamic_cast<DeviceModule *>(&root))
        dm->setExecutionDevice(device, false);
    for (auto &entry : root.children())
        setExecutionDevices(*entry.second, device);
}

namespace {
// A decode step multiplies one row by each weight, reading every weight once: a GEMV, not a GEMM
// (which packs weight panels first). Float32 on the CPU only: the other dtypes and devices keep the
// GEMM path.
bool isSingleCpuFloatRow(const at::Tensor &flat)
{
    return flat.dim() == 2 && flat.size(0) == 1 && flat.is_cpu() && flat.scalar_type() == at::kFloat;
}

// Float32 rows on the CPU, as many as ourKernelMostRows() (promptkernel.h: chosen by measurement, at
// most kOurKernelMostRows).
bool isFewCpuFloatRows(const at::Tensor &flat)
{
    return flat.dim() == 2 && flat.size(0) >= 1 && flat.size(0) <= ourKernelMostRows() && flat.is_cpu() &&
           flat.scalar_type() == at::kFloat;
}

// How many bfloat16 rows take our kernels (bf16gemv.h for a Linear, the column kernel for a Conv1D):
// one (a decode step) on every CPU, any number where libtorch's bfloat16 GEMM has no instructions of
// its own (bf16GemmHere), except that a Conv1D there takes ours up to kOurBf16ColumnKernelMostRows
// rows only (Conv1D::forward).
bool bf16RowsTakeOurKernel(int64_t rows)
{
    return rows == 1 || (rows > 1 && !bf16GemmHere());
}

// Bfloat16 rows on the CPU times a bfloat16 weight without autograd: bf16gemv.h's kernel for one row
// (libtorch's runs on the one intra-op thread a decode step leaves it, OneThreadedOps), and for any
// number of rows where libtorch's bfloat16 GEMM has no instructions of its own (bf16GemmHere):
// there it widens every value in software: the 1.1B Llama's 16-token prompt in bfloat16 took
// 1798-1940 ms to the first token through it on the AVX2 EPYC, 516-560 ms through ours, its
// 128-token prompt 14.3-15.5 s and 4.5-6.1 s (docs/quantization.md, "Prompts through the decode
// kernel", "Bfloat16 prompts of any length through our kernels").
bool takesBf16Gemv(const at::Tensor &flat, const at::Tensor &weight, const at::Tensor &bias)
{
    return flat.dim() == 2 && bf16RowsTakeOurKernel(flat.size(0)) && flat.is_cpu() &&
           flat.scalar_type() == at::kBFloat16 && weight.scalar_type() == at::kBFloat16 && weight.is_cpu() &&
           weight.dim() == 2 && weight.is_contiguous() && flat.size(1) == weight.size(1) &&
           (!bias.defined() || (bias.scalar_type() == at::kBFloat16 && bias.is_cpu() && bias.is_contiguous() &&
                                bias.dim() == 1 && bias.size(0) == weight.size(0))) &&
           !at::GradMode::is_enabled();
}

at::Tensor bf16LinearRows(const at::Tensor &x, const at::Tensor &flat, const at::Tensor &weight, const at::Tensor &bias)
{
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    const at::Tensor rows = flat.contiguous();
    at::Tensor out = at::empty({rows.size(0), weight.size(0)}, rows.options());
    const auto bits = [](const at::Tensor &t) {
        return reinterpret_cast<const uint16_t *>(t.data_ptr<at::BFloat16>());
    };
    bf16::gemv(hostKernelIsa(), bits(rows), rows.size(0), weight.size(1), bits(weight),
               bias.defined() ? bits(bias) : nullptr, weight.size(0),
               reinterpret_cast<uint16_t *>(out.data_ptr<at::BFloat16>()));
    return out.view(sizes);
}

} // namespace

at::Tensor linearRows(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias)
{
    auto flat = x.reshape({-1, x.size(-1)});
    if (takesBf16Gemv(flat, weight, bias))
        return bf16LinearRows(x, flat, weight, bias);
    if (!isFewCpuFloatRows(flat) || weight.scalar_type() != at::kFloat || !weight.is_cpu() || weight.dim() != 2 ||
        !weight.is_contiguous() || flat.size(1) != weight.size(1) ||
        (bias.defined() && (bias.scalar_type() != at::kFloat || !bias.is_cpu() || !bias.is_contiguous() ||
                            bias.numel() != weight.size(0))) ||
        at::GradMode::is_enabled())
        return at::linear(x, weight, bias);
    // Our float32 kernel (floatgemv.h). For one row libtorch's (MKL's sgemv) also runs on one thread of
    // an OpenMP region whose end waits for every team thread, which a loaded machine holds off its CPU.
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    const at::Tensor rows = flat.contiguous();
    at::Tensor out = at::empty({rows.size(0), weight.size(0)}, rows.options());
    f32::gemv(hostKernelIsa(), rows.data_ptr<float>(), rows.size(0), weight.size(1), weight.data_ptr<float>(),
              bias.defined() ? bias.data_ptr<float>() : nullptr, weight.size(0), out.data_ptr<float>());
    return out.view(sizes);
}

bool bf16ColumnsWidened(int64_t rows)
{
    return rows > kOurBf16ColumnKernelMostRows && !bf16GemmHere();
}

// A block holds kWidenedColumnBlockBytes of widened columns, which the GEMM then reads from the cache.
constexpr int64_t kWidenedColumnBlockBytes = int64_t(4) << 20;
at::Tensor widenedBf16Columns(const at::Tensor &rows, const at::Tensor &weight, const at::Tensor &bias)
{
    const int64_t in = weight.size(0), out = weight.size(1);
    const at::Tensor x = rows.to(at::kFloat);
    at::Tensor result = at::empty({rows.size(0), out}, rows.options());
    const int64_t block = std::clamp<int64_t>(kWidenedColumnBlockBytes / (in * int64_t(sizeof(float))), 1, out);
    for (int64_t j = 0; j < out; j += block) {
        const int64_t n = std::min(block, out - j);
        result.narrow(1, j, n).copy_(
            at::addmm(bias.narrow(0, j, n).to(at::kFloat), x, weight.narrow(1, j, n).to(at::kFloat)));
    }
    return result;
}

at::Tensor dropoutIn(const torch::nn::Module &module, const at::Tensor &x, double p)
{
    return p > 0 && module.is_training() ? at::dropout(x, p, /*train=*/true) : x;
}

void LoraAdaptable::attachLora(const LoraSettings &settings)
{
    if (m_loraA)
        throw std::logic_error("attachLora: " + typeName() + " has a LoRA branch already");
    m_lora = settings;
    m_loraA = addChild("lora_A", std::make_unique<Linear>(inFeatures(), settings.rank, false));
    m_loraB = addChild("lora_B", std::make_unique<Linear>(settings.rank, outFeatures(), false));
    m_loraA->setExecutionDevice(executionDevice(), false);
    m_loraB->setExecutionDevice(executionDevice(), false);
    if (!is_training()) {
        m_loraA->eval();
        m_loraB->eval();
    }
}

at::Tensor LoraAdaptable::withLora(const at::Tensor &x, const at::Tensor &out)
{
    if (!m_loraA)
        return out;
    // In the adapter's dtype, as peft casts the input to lora_A's (a bfloat16 base, a float32 adapter).
    const auto type = m_loraA->baseWeight()->value.scalar_type();
    auto branch = m_loraB->forward(m_loraA->forward(dropoutIn(*this, x, m_lora.dropout).to(type)));
    return out + (branch * m_lora.scaling).to(out.scalar_type());
}

at::Tensor LoraAdaptable::quantizedForward(const at::Tensor &x, const at::Tensor &bias)
{
    auto out = m_quantized->matmul(x);
    return withLora(x, bias.defined() ? out + bias.to(out.scalar_type()) : out);
}

Linear::Linear(int64_t in, int64_t out, bool bias) : LoraAdaptable("Linear"), m_in(in), m_out(out)
{
    m_weight = addParameter("weight", {out, in});
    if (bias)
        m_bias = addParameter("bias", {out});
}

void Linear::storeQuantized(const std::vector<std::pair<std::string, std::vector<int64_t>>> &tensors,
                            QuantizedBuilder builder)
{
    removeParameter("weight");
    m_weight = nullptr;
    m_stored.clear();
    for (const auto &[name, shape] : tensors) {
        Parameter *p = addParameter(name, shape);
        p->keepDtype = true;
        m_stored.push_back(p);
    }
    m_builder = std::move(builder);
}

Result<void> Linear::buildQuantized()
{
    std::map<std::string, at::Tensor> values;
    for (Parameter *p : m_stored)
        values[p->localName] = p->value;
    auto built = m_builder(values);
    if (!built)
        return tl::unexpected(built.error());
    m_quantized = std::make_shared<const QuantizedWeight>(std::move(*built));
    return {};
}

at::Tensor Linear::forward(const at::Tensor &x)
{
    ForwardScope scope(*this);
    auto input = toDevice(x);
    const at::Tensor bias = m_bias ? m_bias->value : at::Tensor();
    if (m_builder && !hooks().empty()) { // offloaded: built from this forward's tensors, dropped after
        if (auto built = buildQuantized(); !built)
            throw std::runtime_error(built.error().message);
        auto out = quantizedForward(input, bias);
        m_quantized.reset();
        return out;
    }
    if (m_quantized)
        return quantizedForward(input, bias);
    const at::Tensor &weight = m_weight->value;
    if (m_tensorParallel && m_style == TensorParallelStyle::Row) { // this rank's part, summed, then the bias
        auto out = leaveTensorParallel(at::linear(input, weight), *m_tensorParallel);
        return bias.defined() ? out + bias : out;
    }
    if (weight.scalar_type() != input.scalar_type()) // a layer kept in float32 among bfloat16 ones
        return withLora(input, at::linear(input.to(weight.scalar_type()), weight,
                                          bias.defined() ? bias.to(weight.scalar_type()) : bias)
                                   .to(input.scalar_type()));
    return withLora(input, linearRows(input, weight, bias));
}

// ---- Tensor parallelism (tensorparallel.h) ---------------------------------------------------

namespace {

// What crosses the group, forward or backward. Sequence flows act on dim 1 ([batch, tokens, ...]).
enum class Flow : int64_t { Identity, AllReduce, AllGather, ReduceScatter, Slice };

int64_t handle(const TensorParallelGroup &group)
{
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(&group));
}

// Every rank's part of `dim` joined again.
at::Tensor gathered(const at::Tensor &part, int64_t dim, const TensorParallelGroup &group)
{
    at::Tensor input = part.detach().transpose(0, dim).contiguous();
    std::vector<int64_t> shape = input.sizes().vec();
    shape[0] *= group.size;
    at::Tensor output = at::empty(shape, input.options());
    group.allGather(output, input);
    return output.transpose(0, dim).contiguous();
}

// This rank's part of dim 1 (which divides by the group's size), in storage of its own.
at::Tensor ownTokens(const at::Tensor &x, const TensorParallelGroup &group)
{
    const int64_t part = x.size(1) / group.size;
    return x.narrow(1, group.rank * part, part).clone(at::MemoryFormat::Contiguous);
}

at::Tensor communicate(Flow flow, const at::Tensor &x, const TensorParallelGroup &group)
{
    switch (flow) {
    case Flow::Identity:
        return x.clone();
    case Flow::AllReduce: {
        at::Tensor sum = x.contiguous().clone();
        group.allReduceSum(sum);
        return sum;
    }
    case Flow::AllGather:
        return gathered(x, 1, group);
    case Flow::ReduceScatter: {
        if (!group.reduceScatter) {
            at::Tensor sum = x.contiguous().clone();
            group.allReduceSum(sum);
            return ownTokens(sum, group);
        }
        at::Tensor input = x.transpose(0, 1).contiguous();
        std::vector<int64_t> shape = input.sizes().vec();
        shape[0] /= group.size;
        at::Tensor output = at::empty(shape, input.options());
        group.reduceScatter(output, input);
        return output.transpose(0, 1).contiguous();
    }
    case Flow::Slice:
        return ownTokens(x, group);
    }
    return x;
}

struct Communicate : torch::autograd::Function<Communicate> {
    static at::Tensor forward(torch::autograd::AutogradContext *context, const at::Tensor &x, int64_t group,
                              int64_t forwardFlow, int64_t backwardFlow)
    {
        context->saved_data["group"] = group;
        context->saved_data["backward"] = backwardFlow;
        return communicate(static_cast<Flow>(forwardFlow), x.detach(),
                           *reinterpret_cast<const TensorParallelGroup *>(group));
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext *context,
                                                   torch::autograd::variable_list gradients)
    {
        const auto &group = *reinterpret_cast<const TensorParallelGroup *>(context->saved_data["group"].toInt());
        const auto flow = static_cast<Flow>(context->saved_data["backward"].toInt());
        return {communicate(flow, gradients[0].contiguous(), group), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

at::Tensor apply(const at::Tensor &x, const TensorParallelGroup &group, Flow forward, Flow backward)
{
    return Communicate::apply(x, handle(group), static_cast<int64_t>(forward), static_cast<int64_t>(backward));
}

// Rank `rank`'s part of `dim` of `whole` (size divisible by `size`), in its own storage.
at::Tensor partOf(const at::Tensor &whole, int64_t dim, int rank, int size)
{
    const int64_t part = whole.size(dim) / size;
    return whole.narrow(dim, rank * part, part).clone();
}

} // namespace

at::Tensor enterTensorParallel(const at::Tensor &x, const TensorParallelGroup &group)
{
    return group.sequenceParallel ? apply(x, group, Flow::AllGather, Flow::ReduceScatter)
                                  : apply(x, group, Flow::Identity, Flow::AllReduce);
}

at::Tensor leaveTensorParallel(const at::Tensor &x, const TensorParallelGroup &group)
{
    return group.sequenceParallel ? apply(x, group, Flow::ReduceScatter, Flow::AllGather)
                                  : apply(x, group, Flow::AllReduce, Flow::Identity);
}

at::Tensor scatterSequence(const at::Tensor &x, const TensorParallelGroup &group)
{
    return apply(x, group, Flow::Slice, Flow::AllGather);
}

at::Tensor gatherSequence(const at::Tensor &x, const TensorParallelGroup &group)
{
    return apply(x, group, Flow::AllGather, Flow::Slice);
}

at::Tensor sumGradientOverGroup(const at::Tensor &x, const TensorParallelGroup &group)
{
    return apply(x, group, Flow::Identity, Flow::AllReduce);
}

at::Tensor sequenceParallelDropout(const at::Tensor &x, double p, const TensorParallelGroup &group)
{
    std::vector<int64_t> whole = x.sizes().vec();
    whole[1] *= group.size;
    at::Tensor keep = at::empty(whole, x.options()).bernoulli_(1.0 - p);
    return x * keep.narrow(1, group.rank * x.size(1), x.size(1)) / (1.0 - p);
}

at::Tensor vocabParallelCrossEntropy(const at::Tensor &logits, const at::Tensor &targets, int64_t ignoreIndex,
                                     const TensorParallelGroup &group)
{
    const at::Tensor local = logits.to(at::kFloat);
    const int64_t columns = local.size(-1), first = group.rank * columns;
    // The largest logit of each row over the group (a constant for the gradient).
    at::Tensor maxima = std::get<0>(local.detach().max(-1)).contiguous();
    at::Tensor all = at::empty({group.size * maxima.size(0)}, maxima.options());
    group.allGather(all, maxima);
    const at::Tensor largest = std::get<0>(all.view({group.size, -1}).max(0));
    const at::Tensor shifted = local - largest.unsqueeze(-1);
    // Sums over the group: every rank computes the same loss from them, so each rank's own terms
    // take the loss's gradient as is (AllReduce forward, Identity backward).
    const at::Tensor sumExp = apply(shifted.exp().sum(-1), group, Flow::AllReduce, Flow::Identity);
    const at::Tensor index = targets.to(at::kLong) - first;
    const at::Tensor owned = (index >= 0).logical_and(index < columns).logical_and(targets != ignoreIndex);
    const at::Tensor picked =
        shifted.gather(-1, index.clamp(0, columns - 1).unsqueeze(-1)).squeeze(-1).masked_fill(owned.logical_not(), 0);
    const at::Tensor target = apply(picked, group, Flow::AllReduce, Flow::Identity);
    return (sumExp.log() - target).masked_fill(targets == ignoreIndex, 0);
}

void Linear::splitForTensorParallel(TensorParallelStyle style, TensorParallel group)
{
    const int64_t dim = style == TensorParallelStyle::Column ? 0 : 1;
    m_weight->value = partOf(m_weight->value, dim, group->rank, group->size);
    m_weight->shape = m_weight->value.sizes().vec();
    if (style == TensorParallelStyle::Column) {
        m_out /= group->size;
        if (m_bias) {
            m_bias->value = partOf(m_bias->value, 0, group->rank, group->size);
            m_bias->shape = {m_out};
        }
    } else {
        m_in /= group->size;
    }
    m_style = style;
    m_tensorParallel = std::move(group);
}

void Linear::gatherTensorParallel()
{
    if (!m_tensorParallel)
        return;
    const TensorParallelGroup &group = *m_tensorParallel;
    const bool column = m_style == TensorParallelStyle::Column;
    m_weight->value = gathered(m_weight->value, column ? 0 : 1, group);
    m_weight->shape = m_weight->value.sizes().vec();
    if (column) {
        m_out *= group.size;
        if (m_bias) {
            m_bias->value = gathered(m_bias->value, 0, group);
            m_bias->shape = {m_out};
        }
    } else {
        m_in *= group.size;
    }
    m_tensorParallel.reset();
}

Conv1D::Conv1D(int64_t in, int64_t out) : LoraAdaptable("Conv1D"), m_out(out)
{
    m_weight = addParameter("weight", {in, out});
    m_bias = addParameter("bias", {out});
}

at::Tensor Conv1D::forward(const at::Tensor &x)
{
    ForwardScope scope(*this);
    auto input = toDevice(x);
    if (m_quantized)
        return quantizedForward(input, m_bias->value);
    auto sizes = input.sizes().vec();
    auto rows = input.reshape({-1, sizes.back()});
    sizes.back() = m_out;
    const at::Tensor &weight = m_weight->value, &bias = m_bias->value;
    if (isFewCpuFloatRows(rows) && weight.scalar_type() == at::kFloat && weight.is_cpu() && weight.is_contiguous() &&
        weight.dim() == 2 && weight.size(0) == rows.size(1) && weight.size(1) == m_out &&
        bias.scalar_type() == at::kFloat && bias.is_cpu() && bias.is_contiguous() && bias.numel() == m_out &&
        !at::GradMode::is_enabled()) {
        // The weight is [in, out]: our column products (gemvcolumns.h) read it as stored. One row (a
        // decode step) on the threads a decode step shares (libtorch's addmv would run on the one
        // intra-op thread left); a prompt's rows, up to ourKernelMostRows(), in register tiles on the
        // OpenMP team, where libtorch's addmm copies the weight's panels first: GPT-2 small's
        // 16-token prompt took 198-208 ms to the first token through it on the AVX2 EPYC, 96-108 ms
        // through ours (docs/quantization.md, "GPT-2 prompts through the column kernel").
        const at::Tensor in = rows.contiguous();
        at::Tensor out = at::empty({in.size(0), m_out}, in.options());
        if (in.size(0) == 1)
            f32::gemvColumns(hostKernelIsa(), in.data_ptr<float>(), weight.size(0), weight.data_ptr<float>(),
                             bias.data_ptr<float>(), m_out, out.data_ptr<float>());
        else
            f32::gemmColumns(hostKernelIsa(), in.data_ptr<float>(), in.size(0), weight.size(0),
                             weight.data_ptr<float>(), bias.data_ptr<float>(), m_out, out.data_ptr<float>());
        return withLora(input, out.view(sizes));
    }
    const bool bf16Rows = rows.dim() == 2 && rows.is_cpu() && rows.scalar_type() == at::kBFloat16 &&
                          bf16RowsTakeOurKernel(rows.size(0)) && weight.scalar_type() == at::kBFloat16 &&
                          weight.is_cpu() && weight.is_contiguous() && weight.dim() == 2 &&
                          weight.size(0) == rows.size(1) && weight.size(1) == m_out &&
                          bias.scalar_type() == at::kBFloat16 && bias.is_cpu() && bias.is_contiguous() &&
                          bias.numel() == m_out && !at::GradMode::is_enabled();
    if (bf16Rows && bf16ColumnsWidened(rows.size(0)))
        return withLora(input, widenedBf16Columns(rows.contiguous(), weight, bias).view(sizes));
    if (bf16Rows) {
        // The same at bfloat16: widened, float32 sums, one rounding (libtorch's addmm runs on one
        // thread). One row is a decode step. A prompt's rows take it too, one row after another,
        // up to kOurBf16ColumnKernelMostRows where libtorch's bfloat16 GEMM has no instructions of
        // its own (bf16GemmHere): each row reads the weight again, but that GEMM widens every value
        // in software. On the AVX2 EPYC, GPT-2 small's 16-token prompt took 3.1-3.4 s to the first
        // token through that GEMM and 0.15-0.22 s through this loop (docs/quantization.md,
        // "Bfloat16 prompts of any length through our kernels").
        const at::Tensor in = rows.contiguous();
        at::Tensor out = at::empty({in.size(0), m_out}, in.options());
        const auto bits = [](const at::Tensor &t) {
            return reinterpret_cast<const uint16_t *>(t.data_ptr<at::BFloat16>());
        };
        auto *o = reinterpret_cast<uint16_t *>(out.data_ptr<at::BFloat16>());
        for (int64_t r = 0; r < in.size(0); ++r)
            bf16::gemvColumns(hostKernelIsa(), bits(in) + r * in.size(1), weight.size(0), bits(weight), bits(bias),
                              m_out, o + r * m_out);
        return withLora(input, out.view(sizes));
    }
    if (isSingleCpuFloatRow(rows) && weight.scalar_type() == at::kFloat)
        return withLora(input, at::addmv(bias, weight.t(), rows[0]).view(sizes)); // weight is [in, out]
    return withLora(input, at::addmm(m_bias->value, rows, m_weight->value).view(sizes));
}

LayerNorm::LayerNorm(int64_t size, double eps) : DeviceModule("LayerNorm"), m_eps(eps)
{
    m_weight = addParameter("weight", {size});
    m_bias = addParameter("bias", {size});
}

at::Tensor LayerNorm::forward(const at::Tensor &x)
{
    ForwardScope scope(*this);
    return at::layer_norm(toDevice(x), {m_weight->shape[0]}, m_weight->value, m_bias->value, m_eps);
}

RMSNorm::RMSNorm(int64_t size, double eps, bool plusOne, std::string typeName)
    : DeviceModule(std::move(typeName)), m_eps(eps), m_plusOne(plusOne)
{
    m_weight = addParameter("weight", {size});
}

at::Tensor RMSNorm::forward(const at::Tensor &x)
{
    ForwardScope scope(*this);
    auto input = toDevice(x);
    auto h = input.to(at::kFloat);
    auto variance = h.pow(2).mean(-1, /*keepdim=*/true);
    h = h * at::rsqrt(variance + m_eps);
    const at::Tensor weight =
        m_gradientGroup ? sumGradientOverGroup(m_weight->value, *m_gradientGroup) : m_weight->value;
    if (m_plusOne)
        return (h * (1.0 + weight.to(at::kFloat))).to(input.scalar_type());
    return weight * h.to(input.scalar_type());
}

Embedding::Embedding(int64_t count, int64_t size) : DeviceModule("Embedding")
{
    m_weight = addParameter("weight", {count, size});
}

at::Tensor Embedding::forward(const at::Tensor &ids)
{
    ForwardScope scope(*this);
    if (!m_tensorParallel)
        return at::embedding(m_weight->value, toDevice(ids));
    // This rank's rows: ids outside them look up row 0 and give zeros; the sum over the group is whole.
    const int64_t rows = m_weight->value.size(0);
    const at::Tensor local = toDevice(ids) - m_tensorParallel->rank * rows;
    const at::Tensor outside = (local < 0).logical_or(local >= rows);
    const at::Tensor part =
        at::embedding(m_weight->value, local.masked_fill(outside, 0)).masked_fill(outside.unsqueeze(-1), 0);
    return leaveTensorParallel(part, *m_tensorParallel);
}

void Embedding::splitForTensorParallel(TensorParallel group)
{
    m_weight->value = partOf(m_weight->value, 0, group->rank, group->size);
    m_weight->shape = m_weight->value.sizes().vec();
    m_tensorParallel = std::move(group);
}

void Embedding::gatherTensorParallel()
{
    if (!m_tensorParallel)
        return;
    m_weight->value = gathered(m_weight->value, 0, *m_tensorParallel);
    m_weight->shape = m_weight->value.sizes().vec();
    m_tensorParallel.reset();
}

at::Tensor Embedding::project(const at::Tensor &hidden)
{
    ForwardScope scope(*this);
    return linearRows(toDevice(hidden), m_weight->value, at::Tensor());
}

at::Tensor activate(const at::Tensor &x, const std::string &activation)
{
    if (activation == "gelu_new" || activation == "gelu_pytorch_tanh" || activation == "gelu_fast")
        return at::gelu(x, "tanh");
    if (activation == "gelu")
        return at::gelu(x);
    if (activation == "relu")
        return at::relu(x);
    return at::silu(x);
}

at::Tensor causalAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double dropout)
{
    AttentionOptions options;
    options.dropout = dropout;
    return causalAttention(q, k, v, options);
}

double attentionScale(const AttentionOptions &options, int64_t dim)
{
    return options.scale > 0 ? options.scale : 1.0 / std::sqrt(static_cast<double>(dim));
}

DecodeAttentionShape decodeAttentionShape(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double scale,
                                          double softcap)
{
    DecodeAttentionShape shape;
    shape.batch = q.size(0);
    shape.heads = q.size(1);
    shape.kvHeads = k.size(1);
    shape.keys = k.size(2);
    shape.dim = q.size(3);
    shape.qBatch = q.stride(0);
    shape.qHead = q.stride(1);
    shape.kBatch = k.stride(0);
    shape.kHead = k.stride(1);
    shape.kKey = k.stride(2);
    shape.vBatch = v.stride(0);
    shape.vHead = v.stride(1);
    shape.vKey = v.stride(2);
    shape.scale = float(scale); // as libtorch multiplies a float32 tensor by a double
    shape.softcap = float(softcap);
    return shape;
}

namespace {

// One query per sequence on the CPU without autograd (a decode step), float32 or bfloat16 alike,
// each row's elements contiguous: decodeattention.h's kernel.
bool takesDecodeAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double dropout)
{
    const auto type = q.scalar_type();
    const auto rowsContiguous = [&](const at::Tensor &t) {
        return t.dim() == 4 && t.is_cpu() && t.scalar_type() == type && t.stride(3) == 1;
    };
    return q.size(2) == 1 && k.size(2) > 0 && dropout == 0 && (type == at::kFloat || type == at::kBFloat16) &&
           rowsContiguous(q) && rowsContiguous(k) && rowsContiguous(v) && !at::GradMode::is_enabled();
}

at::Tensor decodeAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double scale, double softcap)
{
    const DecodeAttentionShape shape = decodeAttentionShape(q, k, v, scale, softcap);
    at::Tensor out = at::empty({shape.batch, shape.heads, 1, shape.dim}, q.options());
    if (q.scalar_type() == at::kFloat) {
        inference::decodeAttention(hostKernelIsa(), shape, q.data_ptr<float>(), k.data_ptr<float>(),
                                   v.data_ptr<float>(), out.data_ptr<float>());
        return out;
    }
    const auto bits = [](const at::Tensor &t) { return reinterpret_cast<uint16_t *>(t.data_ptr<at::BFloat16>()); };
    inference::decodeAttention(hostKernelIsa(), shape, bits(q), bits(k), bits(v), bits(out));
    return out;
}

} // namespace

at::Tensor causalAttention(const at::Tensor &q, const at::Tensor &kAll, const at::Tensor &vAll,
                           const AttentionOptions &options)
{
    const int64_t batch = q.size(0), heads = q.size(1), queries = q.size(2), dim = q.size(3);
    const int64_t kvHeads = kAll.size(1);
    const int64_t groups = heads / kvHeads;
    // A window shorter than the keys: the first query sees the window's last positions only, so
    // the keys before those take no part.
    at::Tensor k = kAll, v = vAll;
    int64_t keys = kAll.size(2);
    const int64_t window = options.window;
    if (window > 0 && keys - queries + 1 > window) {
        const int64_t first = keys - queries + 1 - window;
        k = kAll.narrow(2, first, keys - first);
        v = vAll.narrow(2, first, keys - first);
        keys -= first;
    }
    const double scale = attentionScale(options, dim);
    if (takesDecodeAttention(q, k, v, options.dropout))
        return decodeAttention(q, k, v, scale, options.softcap);
    // Bfloat16 on a CPU where libtorch's bfloat16 GEMM has no instructions of its own (bf16GemmHere)
    // widens every value in software, a prompt's attention products included: GPT-2 small's
    // 512-token prompt spent half its time there. Without autograd they run in float32 over the
    // widened values (exact), each result rounded once to bfloat16 as the bfloat16 product rounds it.
    const bool widened =
        q.scalar_type() == at::kBFloat16 && q.is_cpu() && !bf16GemmHere() && !at::GradMode::is_enabled();
    const auto product = [widened](const at::Tensor &a, const at::Tensor &b) {
        return widened ? at::matmul(a.to(at::kFloat), b.to(at::kFloat)).to(at::kBFloat16) : at::matmul(a, b);
    };
    // Query heads of one key/value head side by side: no copy of the cache.
    auto qg = q.reshape({batch, kvHeads, groups * queries, dim});
    auto scores = product(qg, k.transpose(-1, -2)).to(at::kFloat) * scale;
    if (options.softcap > 0)
        scores = at::tanh(scores / options.softcap) * options.softcap;
    if (queries > 1) {
        auto longs = at::TensorOptions().device(q.device()).dtype(at::kLong);
        auto queryPos = at::arange(keys - queries, keys, longs).unsqueeze(1);
        auto keyPos = at::arange(0, keys, longs).unsqueeze(0);
        auto masked = keyPos > queryPos; // [T, S]
        if (window > 0)
            masked = masked.logical_or(keyPos <= queryPos - window);
        scores = scores.view({batch, kvHeads, groups, queries, keys})
                     .masked_fill(masked, -std::numeric_limits<float>::infinity())
                     .view({batch, kvHeads, groups * queries, keys});
    }
    auto probs = at::softmax(scores, -1).to(v.scalar_type());
    if (options.dropout > 0)
        probs = at::dropout(probs, options.dropout, /*train=*/true);
    return product(probs, v).view({batch, heads, queries, dim});
}

} // namespace accel::inference
