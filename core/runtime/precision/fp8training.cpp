#include "core/runtime/precision/fp8training.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

namespace accel::runtime {

namespace {

constexpr c10::DispatchKey fp8Key = c10::DispatchKey::AutocastPrivateUse1;
thread_local Fp8Training *t_active = nullptr;

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The custom autograd function: forward and both backward GEMMs on quantised operands. Every GEMM's
// result is in `compute` (the compute dtype); the weight gradient then becomes the weight's dtype.
struct Fp8LinearFunction : public torch::autograd::Function<Fp8LinearFunction> {
    static torch::Tensor forward(AutogradContext *ctx, const torch::Tensor &input, const torch::Tensor &weight,
                                 Fp8LayerScaling *layer, bool record, bool pad, int64_t policy,
                                 const Fp8Tensor *gathered, at::ScalarType compute)
    {
        c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
        const int64_t k = input.size(-1);
        auto x = input.reshape({-1, k});
        if (layer->castsInputToComputeDtype())
            x = x.to(compute);
        const Fp8Tensor xq = quantize(x, layer->format(Fp8Role::Input), layer->scaleFor(Fp8Role::Input, x, record));
        const Fp8Tensor wq =
            gathered && gathered->data.defined()
                ? *gathered
                : quantize(weight, layer->format(Fp8Role::Weight), layer->scaleFor(Fp8Role::Weight, weight, record));
        auto out = fp8Matmul(xq, {wq.data.t(), wq.scale}, compute, pad, Fp8GemmPolicy(policy));
        ctx->save_for_backward({xq.data, wq.data, layer->weightGradientInHighPrecision() ? x : torch::Tensor()});
        ctx->saved_data["layer"] = int64_t(reinterpret_cast<intptr_t>(layer));
        ctx->saved_data["sx"] = double(xq.scale);
        ctx->saved_data["sw"] = double(wq.scale);
        ctx->saved_data["pad"] = pad;
        ctx->saved_data["policy"] = policy;
        ctx->saved_data["weight_dtype"] = int64_t(weight.scalar_type());
        auto shape = input.sizes().vec();
        shape.back() = weight.size(0);
        // Not a view (F::linear adds the bias in place on 3-D input): the shape changes without a copy.
        return at::_unsafe_view(out, shape);
    }

    static variable_list backward(AutogradContext *ctx, variable_list grads)
    {
        c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
        auto *layer = reinterpret_cast<Fp8LayerScaling *>(intptr_t(ctx->saved_data["layer"].toInt()));
        const bool pad = ctx->saved_data["pad"].toBool();
        const auto policy = Fp8GemmPolicy(ctx->saved_data["policy"].toInt());
        const auto saved = ctx->get_saved_variables();
        const Fp8Tensor xq{saved[0], float(ctx->saved_data["sx"].toDouble())};
        const Fp8Tensor wq{saved[1], float(ctx->saved_data["sw"].toDouble())};
        const torch::Tensor &highPrecisionInput = saved[2];
        const auto &grad = grads[0];
        auto g = grad.reshape({-1, grad.size(-1)});
        const Fp8Tensor gq =
            quantize(g, layer->format(Fp8Role::GradOutput), layer->scaleFor(Fp8Role::GradOutput, g, true));
        auto gradInput = fp8Matmul(gq, wq, grad.scalar_type(), pad, policy);
        auto shape = grad.sizes().vec();
        shape.back() = wq.data.size(1);
        const auto compute = grad.scalar_type(); // the output's dtype: the compute dtype
        torch::Tensor gradWeight =
            highPrecisionInput.defined()
                ? torch::mm(g.t().to(torch::kFloat), highPrecisionInput.to(torch::kFloat)).to(compute)
                : fp8Matmul({gq.data.t(), gq.scale}, xq, compute, pad, policy);
        gradWeight = layer->finishWeightGradient(
            gradWeight.to(static_cast<at::ScalarType>(ctx->saved_data["weight_dtype"].toInt())));
        return {gradInput.reshape(shape), gradWeight,      torch::Tensor(), torch::Tensor(),
                torch::Tensor(),          torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

// The bias in the output's dtype, added there (torchao's and MS-AMP's `out + bias.to(out.dtype)`).
at::Tensor addBias(const at::Tensor &out, const at::Tensor &bias)
{
    return out + bias.to(out.scalar_type());
}

// linear(input, weight, bias) and what libtorch's F::linear calls instead of it:
// addmm(bias, input, weight.t()) for 2-D input with a bias, else matmul(input, weight.t()).
at::Tensor linearKernel(const at::Tensor &input, const at::Tensor &weight, const std::optional<at::Tensor> &bias)
{
    c10::impl::ExcludeDispatchKeyGuard skip(fp8Key);
    const auto *layer = t_active ? t_active->find(weight, false) : nullptr;
    if (!layer)
        return at::linear(input, weight, bias);
    auto out = fp8Linear(input, layer->weight, *layer->scaling, t_active->recipe().config(), &layer->gathered);
    return bias && bias->defined() ? addBias(out, *bias) : out;
}

at::Tensor addmmKernel(const at::Tensor &self, const at::Tensor &mat1, const at::Tensor &mat2, const at::Scalar &beta,
                       const at::Scalar &alpha)
{
    c10::impl::ExcludeDispatchKeyGuard skip(fp8Key);
    const auto *layer = t_active ? t_active->find(mat2, true) : nullptr;
    if (!layer || !beta.equal(1) || !alpha.equal(1))
        return at::addmm(self, mat1, mat2, beta, alpha);
    return addBias(fp8Linear(mat1, layer->weight, *layer->scaling, t_active->recipe().config(), &layer->gathered),
                   self);
}

at::Tensor matmulKernel(const at::Tensor &self, const at::Tensor &other)
{
    c10::impl::ExcludeDispatchKeyGuard skip(fp8Key);
    const auto *layer = t_active && self.dim() >= 2 ? t_active->find(other, true) : nullptr;
    if (!layer)
        return at::matmul(self, other);
    return fp8Linear(self, layer->weight, *layer->scaling, t_active->recipe().config(), &layer->gathered);
}

// weight.t(), F::linear's first step, on a converted weight whose codes the FSDP2 float8 all-gather
// holds: its float32 storage is released, which transpose's bounds check refuses. The FP8 Linear
// reads the codes and computes the gradient of the parameter itself, so the transposed tensor only
// has to be recognised (find()): the same storage, offset and swapped sizes and strides, no data.
at::Tensor tKernel(const at::Tensor &self)
{
    c10::impl::ExcludeDispatchKeyGuard skip(fp8Key);
    const auto *layer = t_active ? t_active->find(self, false) : nullptr;
    if (!layer || !layer->gathered.data.defined())
        return at::t(self);
    auto alias = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(self.storage()),
                                                          self.key_set(), self.dtype());
    alias.unsafeGetTensorImpl()->set_storage_offset(self.storage_offset());
    const std::vector<int64_t> sizes{self.size(1), self.size(0)}, strides{self.stride(1), self.stride(0)};
    alias.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
    return alias;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m)
{
    m.impl("t", TORCH_FN(tKernel));
    m.impl("linear", TORCH_FN(linearKernel));
    m.impl("addmm", TORCH_FN(addmmKernel));
    m.impl("matmul", TORCH_FN(matmulKernel));
}
// Every other operator passes straight through the key.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m)
{
    m.fallback(torch::CppFunction::makeFallthrough());
}

at::ScalarType fp8ComputeDtype(const torch::Tensor &input)
{
    const auto device = input.device().type();
    return at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device) : input.scalar_type();
}

torch::Tensor fp8Linear(const torch::Tensor &input, const torch::Tensor &weight, Fp8LayerScaling &layer,
                        const Fp8Config &config, const Fp8Tensor *gathered)
{
    const bool record = torch::GradMode::is_enabled();
    return Fp8LinearFunction::apply(input, weight, &layer, record, config.padInnerDim, int64_t(config.gemm), gathered,
                                    fp8ComputeDtype(input));
}

// ---- Fp8Training -----------------------------------------------------------------------------

Fp8Training::Fp8Training(std::unique_ptr<Fp8Recipe> recipe) : m_recipe(std::move(recipe)) {}
Fp8Training::~Fp8Training() = default;

Result<std::unique_ptr<Fp8Training>> Fp8Training::create(const Fp8Config &config, ReduceMax reduceMax)
{
    auto recipe = Fp8Recipe::create(config, std::move(reduceMax));
    if (!recipe)
        return tl::unexpected(recipe.error());
    return std::unique_ptr<Fp8Training>(new Fp8Training(std::move(*recipe)));
}

std::vector<LinearLayerRecogniser> &linearLayerKinds()
{
    static std::vector<LinearLayerRecogniser> kinds;
    return kinds;
}

void registerLinearLayerKind(LinearLayerRecogniser recognise)
{
    linearLayerKinds().push_back(std::move(recognise));
}

Fp8Training::Conversion Fp8Training::convert(const std::shared_ptr<torch::nn::Module> &model)
{
    Conversion conversion;
    m_model = model;
    std::vector<std::pair<std::string, LinearLayerView>> linears;
    for (const auto &item : model->named_modules()) {
        if (auto *linear = dynamic_cast<torch::nn::LinearImpl *>(item.value().get())) {
            linears.emplace_back(item.key(), LinearLayerView{linear->weight, linear->options.in_features(),
                                                             linear->options.out_features()});
            continue;
        }
        for (const auto &recognise : linearLayerKinds()) {
            if (auto view = recognise(*item.value())) {
                linears.emplace_back(item.key(), *view);
                break;
            }
        }
    }
    std::vector<torch::Tensor> weights;
    for (size_t i = 0; i < linears.size(); ++i) {
        auto &[name, linear] = linears[i];
        Fp8LinearInfo info{name, linear.in, linear.out, i, linears.size()};
        std::string why;
        if (!m_recipe->converts(info, &why)) {
            conversion.kept.emplace_back(name, why);
            continue;
        }
        m_layers.push_back({m_recipe->createLayer(info), linear.weight, {}});
        m_weights.push_back(linear.weight);
        weights.push_back(linear.weight);
        conversion.converted.push_back(name);
    }
    m_recipe->prepareWeights(weights);
    return conversion;
}

const Fp8Training::Layer *Fp8Training::find(const torch::Tensor &tensor, bool transposed) const
{
    if (m_layers.empty() || !tensor.defined() || tensor.dim() != 2 || !tensor.has_storage())
        return nullptr;
    const c10::StorageImpl *storage = tensor.storage().unsafeGetStorageImpl();
    const int a = transposed ? 1 : 0, b = 1 - a;
    for (const Layer &layer : m_layers) {
        const torch::Tensor &w = layer.weight;
        if (w.storage().unsafeGetStorageImpl() == storage && w.storage_offset() == tensor.storage_offset() &&
            tensor.size(0) == w.size(a) && tensor.size(1) == w.size(b) && tensor.stride(0) == w.stride(a) &&
            tensor.stride(1) == w.stride(b))
            return &layer;
    }
    return nullptr;
}

float Fp8Training::weightScale(float amax) const
{
    return m_recipe->gatheredWeightScale(amax);
}

void Fp8Training::setGathered(const torch::Tensor &weight, const Fp8Tensor &codes)
{
    for (Layer &layer : m_layers) {
        if (layer.weight.is_same(weight)) {
            layer.gathered = codes;
            return;
        }
    }
    throw std::logic_error("Fp8Training::setGathered: the tensor is no converted Linear's weight");
}

Fp8LayerScaling *Fp8Training::layerFor(const torch::Tensor &weight) const
{
    const Layer *layer = find(weight, false);
    return layer ? layer->scaling.get() : nullptr;
}

Fp8Training::Scope Fp8Training::scope()
{
    auto model = m_model.lock();
    const bool on = !model || model->is_training() || m_recipe->inEvaluation();
    return Scope(on ? this : nullptr);
}

Fp8Training::Scope::Scope(Fp8Training *training)
{
    if (!training)
        return;
    m_active = true;
    m_previous = t_active;
    t_active = training;
    m_wasIncluded = c10::impl::tls_is_dispatch_key_included(fp8Key);
    m_wasExcluded = c10::impl::tls_is_dispatch_key_excluded(fp8Key);
    c10::impl::tls_set_dispatch_key_included(fp8Key, true);
    c10::impl::tls_set_dispatch_key_excluded(fp8Key, false);
}

Fp8Training::Scope::Scope(Scope &&other) noexcept
    : m_previous(other.m_previous), m_active(other.m_active), m_wasIncluded(other.m_wasIncluded),
      m_wasExcluded(other.m_wasExcluded)
{
    other.m_active = false;
}

Fp8Training::Scope::~Scope()
{
    if (!m_active)
        return;
    c10::impl::tls_set_dispatch_key_included(fp8Key, m_wasIncluded);
    c10::impl::tls_set_dispatch_key_excluded(fp8Key, m_wasExcluded);
    t_active = m_previous;
}

} // namespace accel::runtime
