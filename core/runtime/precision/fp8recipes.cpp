// The recipes: TE-style delayed scaling and torchao-style dynamic scaling here, MS-AMP-style O1/O2 in
// msamprecipe.cpp; Fp8Recipe::create picks the one the settings name.
#include "core/runtime/precision/fp8recipe.h"

#include "core/common/accelerateenv.h"

namespace accel::runtime {

namespace {

bool multipleOf16(const Fp8LinearInfo &layer, std::string *why)
{
    if (layer.inFeatures % 16 == 0 && layer.outFeatures % 16 == 0)
        return true;
    if (why)
        *why = "in_features " + std::to_string(layer.inFeatures) + " or out_features " +
               std::to_string(layer.outFeatures) + " is not a multiple of 16";
    return false;
}

// ---- TE: DelayedScaling --------------------------------------------------------------------

class DelayedLayer : public Fp8LayerScaling {
public:
    DelayedLayer(const Fp8Config &c)
        : m_forward(Fp8Format::E4M3),
          m_backward(c.format == Fp8RecipeFormat::Hybrid ? Fp8Format::E5M2 : Fp8Format::E4M3), m_wgrad(c.overrideWgrad),
          states{DelayedScalingState(c.amaxHistoryLen, c.amaxComputeAlgo, c.margin, fp8MaxFinite(m_forward)),
                 DelayedScalingState(c.amaxHistoryLen, c.amaxComputeAlgo, c.margin, fp8MaxFinite(m_forward)),
                 DelayedScalingState(c.amaxHistoryLen, c.amaxComputeAlgo, c.margin, fp8MaxFinite(m_backward))}
    {}
    Fp8Format format(Fp8Role role) const override { return role == Fp8Role::GradOutput ? m_backward : m_forward; }
    float scaleFor(Fp8Role role, const torch::Tensor &x, bool record) override
    {
        auto &state = states[size_t(role)];
        if (record)
            state.record(absMax(x));
        return state.scale();
    }
    bool weightGradientInHighPrecision() const override { return m_wgrad; }

    Fp8Format m_forward, m_backward;
    bool m_wgrad;
    DelayedScalingState states[3];
};

class DelayedScalingRecipe : public Fp8Recipe {
public:
    DelayedScalingRecipe(const Fp8Config &config, ReduceMax reduceMax)
        : m_config(config), m_reduceMax(std::move(reduceMax))
    {}
    const Fp8Config &config() const override { return m_config; }
    bool converts(const Fp8LinearInfo &layer, std::string *why) const override { return multipleOf16(layer, why); }
    std::shared_ptr<Fp8LayerScaling> createLayer(const Fp8LinearInfo &info) override
    {
        auto layer = std::make_shared<DelayedLayer>(m_config);
        m_layers.push_back(layer);
        m_names.push_back(info.name);
        return layer;
    }
    bool inEvaluation() const override { return m_config.useAutocastDuringEval; }
    // Per layer and role "<layer>.<role>.amax_history" [amax_history_len] (row 0 first) and
    // "<layer>.<role>.scale" [1]; the format in the metadata (it decides each role's FP8 maximum).
    StateFile scalingState() const override
    {
        StateFile file;
        file.metadata = {{"recipe", "TE"}, {"fp8_format", formatName()}, {"layers", std::to_string(m_layers.size())}};
        for (size_t i = 0; i < m_layers.size(); ++i) {
            for (size_t r = 0; r < 3; ++r) {
                const auto &state = m_layers[i]->states[r];
                const std::string key = m_names[i] + "." + roleNames[r];
                file.tensors[key + ".amax_history"] = state.history();
                file.tensors[key + ".scale"] = {state.scale()};
            }
        }
        return file;
    }
    std::string restoreScalingState(const StateFile &file) override
    {
        const auto meta = [&file](const std::string &key) {
            auto it = file.metadata.find(key);
            return it == file.metadata.end() ? std::string("(none)") : it->second;
        };
        if (meta("recipe") != "TE")
            return "the FP8 state is of recipe " + meta("recipe") + "; this run is TE";
        if (meta("fp8_format") != formatName())
            return "the FP8 state was saved with fp8_format " + meta("fp8_format") + "; this run uses " + formatName();
        if (meta("layers") != std::to_string(m_layers.size()))
            return "the FP8 state holds " + meta("layers") + " FP8 Linear layers; this model converts " +
                   std::to_string(m_layers.size());
        // Everything is checked before anything changes.
        std::vector<std::pair<const std::vector<float> *, float>> found;
        for (size_t i = 0; i < m_layers.size(); ++i) {
            for (size_t r = 0; r < 3; ++r) {
                const std::string key = m_names[i] + "." + roleNames[r];
                auto history = file.tensors.find(key + ".amax_history");
                auto scale = file.tensors.find(key + ".scale");
                if (history == file.tensors.end() || scale == file.tensors.end() || scale->second.size() != 1)
                    return "tensor " + key + (history == file.tensors.end() ? ".amax_history" : ".scale") +
                           " is missing (the converted layers differ from the checkpoint's)";
                if (history->second.size() != m_layers[i]->states[r].history().size())
                    return key + ".amax_history has " + std::to_string(history->second.size()) +
                           " rows; this run's amax_history_len is " +
                           std::to_string(m_layers[i]->states[r].history().size());
                found.emplace_back(&history->second, scale->second.front());
            }
        }
        size_t k = 0;
        for (auto &layer : m_layers) {
            for (auto &state : layer->states) {
                state.restore(*found[k].first, found[k].second);
                ++k;
            }
        }
        return {};
    }
    std::string freshStateDescription() const override
    {
        if (m_layers.empty())
            return {};
        return "the amax histories (" + std::to_string(m_config.amaxHistoryLen) + " rows) and scales of input, " +
               "weight and grad_output of " + std::to_string(m_layers.size()) +
               " FP8 Linear layers start afresh (empty histories, scale 1)";
    }
    void afterBackward() override
    {
        std::vector<float> current;
        for (auto &layer : m_layers) {
            for (auto &state : layer->states)
                current.push_back(state.currentAmax());
        }
        if (m_config.reduceAmax && m_reduceMax)
            m_reduceMax(current);
        size_t i = 0;
        for (auto &layer : m_layers) {
            for (auto &state : layer->states) {
                state.setCurrentAmax(current[i++]);
                state.update();
            }
        }
    }

private:
    static constexpr const char *roleNames[3] = {"input", "weight", "grad_output"};
    std::string formatName() const { return m_config.format == Fp8RecipeFormat::Hybrid ? "HYBRID" : "E4M3"; }

    Fp8Config m_config;
    ReduceMax m_reduceMax;
    std::vector<std::shared_ptr<DelayedLayer>> m_layers;
    std::vector<std::string> m_names;
};

// ---- torchao: dynamic tensorwise scaling -----------------------------------------------------

class DynamicLayer : public Fp8LayerScaling {
public:
    Fp8Format format(Fp8Role role) const override
    {
        return role == Fp8Role::GradOutput ? Fp8Format::E5M2 : Fp8Format::E4M3;
    }
    float scaleFor(Fp8Role role, const torch::Tensor &x, bool) override
    {
        return dynamicScalingFactor(absMax(x), fp8MaxFinite(format(role)));
    }
};

class DynamicScalingRecipe : public Fp8Recipe {
public:
    explicit DynamicScalingRecipe(const Fp8Config &config) : m_config(config) {}
    const Fp8Config &config() const override { return m_config; }
    // Accelerate's default filter: not the first or the last Linear of the model (registration
    // order), and both dimensions multiples of 16.
    bool converts(const Fp8LinearInfo &layer, std::string *why) const override
    {
        if (layer.index == 0 || layer.index + 1 == layer.count) {
            if (why)
                *why = layer.index == 0 ? "the first Linear layer stays in high precision"
                                        : "the last Linear layer stays in high precision";
            return false;
        }
        return multipleOf16(layer, why);
    }
    std::shared_ptr<Fp8LayerScaling> createLayer(const Fp8LinearInfo &) override
    {
        return std::make_shared<DynamicLayer>();
    }
    // Each Linear's computation sees its unit's whole gathered weight, so every ZeRO stage and FSDP
    // strategy runs it. Under FSDP2 with enable_fsdp_float8_all_gather the converted weights travel
    // as E4M3 codes (torchao's float8 all-gather); FSDP1 and DeepSpeed have no such hook.
    Result<void> checkSharding(ShardingPlan &plan) const override
    {
        if (!plan.sharded())
            return {};
        if (plan.source == ShardingSource::Fsdp && plan.cpuRamEfficientLoading)
            return makeError(ErrorCode::Unsupported,
                             "FSDP_CPU_RAM_EFFICIENT_LOADING=true with " + m_config.describe() +
                                 " is refused (Accelerate refuses torchao's FP8 with CPU-RAM-efficient loading too)");
        if (m_config.enableFsdpFloat8AllGather && !fsdp2(plan))
            plan.notes.push_back(std::string(accelerateenv::kFp8EnableFsdpFloat8AllGather) +
                                 "=true has no effect under " + plan.strategy +
                                 ": torchao's FP8 all-gather works with FSDP2 (fully_shard) only");
        return {};
    }
    bool gathersWeightsInFp8(const ShardingPlan &plan) const override
    {
        return m_config.enableFsdpFloat8AllGather && fsdp2(plan);
    }
    // torchao's float8 all-gather: the weight's dynamic tensorwise scale for E4M3.
    float gatheredWeightScale(float amax) const override
    {
        return dynamicScalingFactor(amax, fp8MaxFinite(Fp8Format::E4M3));
    }

private:
    static bool fsdp2(const ShardingPlan &plan) { return plan.source == ShardingSource::Fsdp && plan.fsdpVersion == 2; }

    Fp8Config m_config;
};

} // namespace

Result<std::unique_ptr<Fp8Recipe>> Fp8Recipe::create(const Fp8Config &config, ReduceMax reduceMax)
{
    switch (config.backend) {
    case Fp8Backend::Te:
        return std::unique_ptr<Fp8Recipe>(new DelayedScalingRecipe(config, std::move(reduceMax)));
    case Fp8Backend::Ao:
        return std::unique_ptr<Fp8Recipe>(new DynamicScalingRecipe(config));
    case Fp8Backend::MsAmp:
        return makeMsAmpRecipe(config, std::move(reduceMax));
    }
    return makeError(ErrorCode::InvalidInput, std::string("fp8: unknown backend ") + fp8BackendName(config.backend));
}

} // namespace accel::runtime
