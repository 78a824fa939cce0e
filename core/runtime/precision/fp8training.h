// FP8 training of a model's Linear layers: the conversion (which layers, by the recipe's filter)
// and the scope in which their forward passes run in FP8.
//
// libtorch's C++ modules call their children through typed members, so a Linear cannot be
// swapped for another module the way Python's convert_to_float8_training does. Instead every
// linear() call inside an Fp8Training::Scope (and the addmm / matmul with weight.t() that libtorch's
// F::linear issues instead) passes through one kernel (registered on the
// dispatcher under the autocast key libtorch reserves for an out-of-tree device, which nothing
// else in this program uses); a call whose weight belongs to a converted layer runs Fp8Linear's
// autograd function (FP8 operands for the forward and both backward GEMMs), any other call goes
// on unchanged. So any model built from torch::nn::Linear (or F::linear) is converted in place.
#pragma once

#include "core/common/result.h"
#include "core/runtime/precision/fp8allgather.h"
#include "core/runtime/precision/fp8recipe.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accel::runtime {

// A layer that computes linear(x, weight, bias) with weight [out, in] without being a
// torch::nn::Linear (the model families' Linear, core/inference): a program registers how to
// recognise its own, and conversion takes them like torch::nn::Linear layers.
struct LinearLayerView {
    torch::Tensor weight; // the parameter itself
    int64_t in = 0, out = 0;
};
using LinearLayerRecogniser = std::function<std::optional<LinearLayerView>(torch::nn::Module &)>;
void registerLinearLayerKind(LinearLayerRecogniser recognise);
std::vector<LinearLayerRecogniser> &linearLayerKinds();

class Fp8Training : public Fp8GatheredWeights {
public:
    static Result<std::unique_ptr<Fp8Training>> create(const Fp8Config &config, ReduceMax reduceMax = {});
    ~Fp8Training() override;

    struct Conversion {
        std::vector<std::string> converted;                    // names of the converted layers
        std::vector<std::pair<std::string, std::string>> kept; // name, why it stays as it is
    };
    // Converts the model's torch::nn::Linear layers (and registered linear kinds) the recipe accepts
    // (named_modules order).
    Conversion convert(const std::shared_ptr<torch::nn::Module> &model);

    // While alive, converted layers run in FP8 on this thread (in evaluation mode only when the
    // recipe says so). Nests.
    class Scope {
    public:
        explicit Scope(Fp8Training *training);
        ~Scope();
        Scope(Scope &&other) noexcept;
        Scope(const Scope &) = delete;
        Scope &operator=(const Scope &) = delete;
        Scope &operator=(Scope &&) = delete;

    private:
        Fp8Training *m_previous = nullptr;
        bool m_active = false;
        bool m_wasIncluded = false, m_wasExcluded = true;
    };
    Scope scope();

    void afterBackward() { m_recipe->afterBackward(); }
    void afterOptimizerStep() { m_recipe->afterOptimizerStep(m_weights); }
    Fp8Recipe &recipe() { return *m_recipe; }
    const Fp8Recipe &recipe() const { return *m_recipe; }
    const std::vector<torch::Tensor> &convertedWeights() const { return m_weights; }

    // The layer a weight belongs to, or null.
    Fp8LayerScaling *layerFor(const torch::Tensor &weight) const;
    struct Layer {
        std::shared_ptr<Fp8LayerScaling> scaling;
        torch::Tensor weight; // the parameter itself (gradients go to it)
        Fp8Tensor gathered;   // FSDP2 float8 all-gather: the weight's gathered codes (data undefined if none)
    };
    // The layer whose weight `tensor` is (transposed: weight.t(), as F::linear passes it).
    const Layer *find(const torch::Tensor &tensor, bool transposed) const;

    // FSDP2 float8 all-gather (fp8allgather.h): the weight scale the recipe gives
    // (Fp8Recipe::gatheredWeightScale), and the codes the sharding engine gathered for a converted weight.
    float weightScale(float amax) const override;
    void setGathered(const torch::Tensor &weight, const Fp8Tensor &codes) override;

private:
    explicit Fp8Training(std::unique_ptr<Fp8Recipe> recipe);
    std::unique_ptr<Fp8Recipe> m_recipe;
    std::weak_ptr<torch::nn::Module> m_model;
    // Found by the weight's storage and offset, read when asked: a sharding strategy moves the
    // weights into its flat parameter after conversion, and frees and re-allocates that storage's
    // memory between uses (ZeRO-3 / FULL_SHARD).
    std::vector<Layer> m_layers;
    std::vector<torch::Tensor> m_weights;
};

// The dtype an FP8 Linear computes in (docs/fp8.md "Compute dtype"): under autocast on the input's
// device the autocast dtype, as TransformerEngine's activation dtype and torchao's and MS-AMP's
// output dtype are under Accelerate's bf16 autocast; otherwise the input's dtype.
at::ScalarType fp8ComputeDtype(const torch::Tensor &input);

// Fp8Linear's forward on its own: input [..., K] @ weight[N, K]^T through FP8 operands (no
// bias), the result in fp8ComputeDtype(input). Differentiable (grad_input and grad_weight GEMMs
// on FP8 operands, results in the compute dtype; the weight gradient then in the weight's dtype).
// With `gathered` (codes defined) the weight operand is those codes and scale (the FSDP2 float8
// all-gather's), and `weight`'s values are not read; its gradient is computed as without.
// `config` gives padInnerDim (K zero-padded to 16) and the GEMM policy.
torch::Tensor fp8Linear(const torch::Tensor &input, const torch::Tensor &weight, Fp8LayerScaling &layer,
                        const Fp8Config &config, const Fp8Tensor *gathered = nullptr);

} // namespace accel::runtime
