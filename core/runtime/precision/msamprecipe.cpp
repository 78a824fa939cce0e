// MS-AMP-style O1 / O2 (docs/fp8.md): E4M3 forward with power-of-two scaling windows, E5M2
// gradients, weights kept as scaled FP16, weight gradients stored in E4M3; under DDP the converted
// weights' gradients are all-reduced in FP8, and the optimizer is MS-AMP's low-bit AdamW.
#include "core/common/accelerateenv.h"
#include "core/common/log.h"
#include "core/runtime/precision/fp8allreduce.h"
#include "core/runtime/precision/fp8recipe.h"
#include "core/runtime/precision/msampadamw.h"
#include "core/runtime/strategy/collectives.h"

#include <cmath>

namespace accel::runtime {

namespace {

constexpr float fp16Max = 65504.0f;

class MsAmpLayer : public Fp8LayerScaling {
public:
    explicit MsAmpLayer(ReduceMax reduceMax) : m_reduceMax(std::move(reduceMax)) {}
    bool castsInputToComputeDtype() const override { return false; }
    Fp8Format format(Fp8Role role) const override
    {
        return role == Fp8Role::GradOutput ? Fp8Format::E5M2 : Fp8Format::E4M3;
    }
    float scaleFor(Fp8Role role, const torch::Tensor &x, bool) override
    {
        const float amax = absMax(x);
        switch (role) {
        case Fp8Role::Input:
            return m_input.scaleFor(amax);
        case Fp8Role::GradOutput:
            return m_gradOutput.scaleFor(amax);
        case Fp8Role::Weight:
            return powerOfTwoScalingFactor(amax, 1.0f, fp8MaxFinite(Fp8Format::E4M3));
        }
        return 1.0f;
    }
    // The weight gradient as MS-AMP stores it: E4M3 with a power-of-two scale from the amax
    // reduced (MAX) across ranks.
    torch::Tensor finishWeightGradient(torch::Tensor gradient) override
    {
        std::vector<float> amax{absMax(gradient)};
        if (std::isnan(amax[0]))
            amax[0] = INFINITY;
        if (m_reduceMax)
            m_reduceMax(amax);
        m_wgradScale = powerOfTwoScalingFactor(amax[0], m_wgradScale, fp8MaxFinite(Fp8Format::E4M3));
        return dequantize(quantize(gradient, Fp8Format::E4M3, m_wgradScale));
    }
    void afterOptimizerStep()
    {
        m_input.update();
        m_gradOutput.update();
    }
    void saveState(torch::serialize::OutputArchive &archive, const std::string &prefix) const
    {
        saveWindow(archive, prefix + "input", m_input);
        saveWindow(archive, prefix + "grad_output", m_gradOutput);
        archive.write(prefix + "wgrad_scale", torch::tensor({m_wgradScale}));
    }
    void loadState(torch::serialize::InputArchive &archive, const std::string &prefix)
    {
        loadWindow(archive, prefix + "input", m_input);
        loadWindow(archive, prefix + "grad_output", m_gradOutput);
        torch::Tensor scale;
        archive.read(prefix + "wgrad_scale", scale);
        m_wgradScale = scale.item<float>();
    }

private:
    static void saveWindow(torch::serialize::OutputArchive &archive, const std::string &key,
                           const PowerOfTwoScalingState &state)
    {
        archive.write(key + "_window", torch::tensor(state.window(), torch::kFloat));
        archive.write(key + "_counter", torch::tensor({int64_t(state.counter())}));
        archive.write(key + "_scale", torch::tensor({state.scale()}));
    }
    static void loadWindow(torch::serialize::InputArchive &archive, const std::string &key,
                           PowerOfTwoScalingState &state)
    {
        torch::Tensor window, counter, scale;
        archive.read(key + "_window", window);
        archive.read(key + "_counter", counter);
        archive.read(key + "_scale", scale);
        window = window.to(torch::kFloat).contiguous();
        const std::vector<float> values(window.data_ptr<float>(), window.data_ptr<float>() + window.numel());
        if (!state.restore(values, int(counter.item<int64_t>()), scale.item<float>()))
            throw std::invalid_argument(key + ": a scaling window of " + std::to_string(values.size()) +
                                        " amaxes; this recipe's windows hold " + std::to_string(state.window().size()));
    }

    ReduceMax m_reduceMax;
    PowerOfTwoScalingState m_input{16, fp8MaxFinite(Fp8Format::E4M3)};
    PowerOfTwoScalingState m_gradOutput{16, fp8MaxFinite(Fp8Format::E5M2)};
    float m_wgradScale = 1.0f;
};

class MsAmpRecipe : public Fp8Recipe {
public:
    MsAmpRecipe(const Fp8Config &config, ReduceMax reduceMax) : m_config(config), m_reduceMax(std::move(reduceMax)) {}
    // MS-AMP keeps scaled FP16 weights with FP8 gradients and moments, which its own ZeRO optimizer
    // partitions (msamp.deepspeed; under FSDP Accelerate refuses MS-AMP): not implemented.
    Result<void> checkSharding(ShardingPlan &plan) const override
    {
        if (!plan.sharded())
            return {};
        return makeError(ErrorCode::Unsupported,
                         plan.describe() + " with " + m_config.describe() +
                             " is not implemented: MS-AMP's FP8 weight gradients and moments need its own ZeRO "
                             "optimizer (msamp.deepspeed), and Accelerate refuses MS-AMP under FSDP; use DDP, or " +
                             accelerateenv::kFp8Backend + "=TE or AO");
    }
    // O1 / O2 under DDP: the converted weights' gradients are all-reduced in FP8 (fp8allreduce.h).
    std::shared_ptr<PrecisionGradientReduction> reduceGradients(const std::vector<torch::Tensor> &weights,
                                                                Collectives &group) override
    {
        const int ranks = group.size();
        m_allReduce = std::make_shared<Fp8GradientAllReduce>(
            weights, ranks,
            [&group](std::vector<float> &amax) {
                torch::Tensor values = torch::tensor(amax, torch::kFloat);
                group.allReduceMax(values);
                std::copy_n(values.data_ptr<float>(), amax.size(), amax.begin());
            },
            [&group, ranks](const torch::Tensor &bytes) {
                const torch::Tensor input = bytes.contiguous();
                torch::Tensor every = torch::empty({ranks * input.numel()}, input.options());
                group.allGather(every, input);
                std::vector<torch::Tensor> perRank;
                for (int r = 0; r < ranks; ++r)
                    perRank.push_back(every.narrow(0, r * input.numel(), input.numel()).view(input.sizes()));
                return perRank;
            });
        return m_allReduce;
    }
    // MS-AMP replaces the optimizer (Adam/AdamW only) by its low-bit one, as msamp.initialize does.
    // The layers' scaling state goes into optimizer.bin with the moments (one recipe, one
    // optimizer), and the FP8 gradient all-reduce's previous scales (DDP with more than one process).
    std::unique_ptr<torch::optim::Optimizer> wrapOptimizer(torch::optim::Optimizer &optimizer, bool report) override
    {
        if (m_optimizer)
            throw std::invalid_argument("fp8 MS-AMP: prepare exactly one optimizer");
        auto msamp = std::make_unique<MsAmpAdamW>(optimizer, m_config.optLevel);
        Fp8GradientAllReduce *allReduce = m_allReduce.get();
        msamp->setCompanionState(
            [this, allReduce](torch::serialize::OutputArchive &a) {
                saveState(a);
                if (allReduce)
                    allReduce->saveState(a);
            },
            [this, allReduce, report](torch::serialize::InputArchive &a) {
                loadState(a);
                if (!allReduce)
                    return;
                if (const std::string fresh = allReduce->loadState(a); !fresh.empty() && report)
                    log::warning("checkpoint", "fp8 MS-AMP: " + fresh);
            });
        m_optimizer = msamp.get();
        return msamp;
    }
    // MS-AMP's optimizer keeps its low-bit moments outside libtorch's optimizer state.
    int64_t optimizerStateBytes() const override { return m_optimizer ? m_optimizer->momentBytes() : 0; }
    const Fp8Config &config() const override { return m_config; }
    bool converts(const Fp8LinearInfo &, std::string *) const override { return true; }
    std::shared_ptr<Fp8LayerScaling> createLayer(const Fp8LinearInfo &) override
    {
        auto layer = std::make_shared<MsAmpLayer>(m_reduceMax);
        m_layers.push_back(layer);
        return layer;
    }
    void afterOptimizerStep(const std::vector<torch::Tensor> &weights) override
    {
        for (auto &layer : m_layers)
            layer->afterOptimizerStep();
        prepareWeights(weights);
    }
    void saveState(torch::serialize::OutputArchive &archive) const override
    {
        archive.write("fp8_msamp/layers", torch::tensor({int64_t(m_layers.size())}));
        for (size_t i = 0; i < m_layers.size(); ++i)
            m_layers[i]->saveState(archive, "fp8_msamp/layer" + std::to_string(i) + "/");
    }
    void loadState(torch::serialize::InputArchive &archive) override
    {
        torch::Tensor layers;
        archive.read("fp8_msamp/layers", layers);
        if (layers.item<int64_t>() != int64_t(m_layers.size()))
            throw std::invalid_argument("fp8 MS-AMP: the checkpoint holds the scaling state of " +
                                        std::to_string(layers.item<int64_t>()) + " FP8 Linear layers; this model has " +
                                        std::to_string(m_layers.size()));
        for (size_t i = 0; i < m_layers.size(); ++i)
            m_layers[i]->loadState(archive, "fp8_msamp/layer" + std::to_string(i) + "/");
    }
    // The weights live as FP16 with a power-of-two scale: round them there.
    void prepareWeights(const std::vector<torch::Tensor> &weights) override
    {
        torch::NoGradGuard noGrad;
        for (const auto &weight : weights) {
            const float scale = powerOfTwoScalingFactor(absMax(weight), 1.0f, fp16Max);
            weight.copy_((weight * scale).to(torch::kHalf).to(weight.scalar_type()) / scale);
        }
    }

private:
    Fp8Config m_config;
    ReduceMax m_reduceMax;
    std::vector<std::shared_ptr<MsAmpLayer>> m_layers;
    std::shared_ptr<Fp8GradientAllReduce> m_allReduce;
    const MsAmpAdamW *m_optimizer = nullptr; // owned by the precision policy
};

} // namespace

std::unique_ptr<Fp8Recipe> makeMsAmpRecipe(const Fp8Config &config, ReduceMax reduceMax)
{
    return std::make_unique<MsAmpRecipe>(config, std::move(reduceMax));
}

} // namespace accel::runtime
