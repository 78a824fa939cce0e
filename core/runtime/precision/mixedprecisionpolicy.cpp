#include "core/runtime/precision/mixedprecisionpolicy.h"

#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/accelerateenv.h"
#include "core/common/log.h"
#include "core/runtime/cudaplugin.h"
#include "core/runtime/gradscaler.h"
#include "core/runtime/precision/fp8training.h"
#include "core/runtime/precision/gradientreduction.h"

#include <cstring>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;

namespace accel::runtime {

namespace {

using bigmodel::DType;

// FP8 GEMMs on a GPU (torch::_scaled_mm) need compute capability 8.9 or higher (Ada, Hopper and
// newer); below that the recipe cannot run there, and the rank says so before training rather than
// failing in the first forward or falling back to bf16.
Result<void> checkFp8Device(const at::Device &device, const Fp8Config &fp8)
{
    if (device.is_cuda()) {
        int major = 0, minor = 0;
        const CudaPlugin *cuda = cudaPlugin();
        if (!cuda || !cuda->computeCapability(device.index(), &major, &minor))
            return makeError(ErrorCode::Unsupported, "mixed precision fp8 (" + fp8.describe() +
                                                         "): cannot read the compute capability of " + device.str());
        if (major * 10 + minor < 89)
            return makeError(ErrorCode::Unsupported, "mixed precision fp8 (" + fp8.describe() +
                                                         ") needs a GPU of compute capability 8.9 or "
                                                         "higher for its FP8 GEMMs: " +
                                                         device.str() + " has " + std::to_string(major) + "." +
                                                         std::to_string(minor) + "; use bf16 there, or " +
                                                         accelerateenv::kUseCpu +
                                                         "=true to run the FP8 recipe on the CPU");
    }
    return {};
}

// FP8: which Linear layers were converted and which stay in high precision (and why).
void reportFp8Conversion(const Fp8Training &fp8, const Fp8Training::Conversion &conversion)
{
    int64_t weights = 0;
    for (const auto &weight : fp8.convertedWeights())
        weights += weight.numel();
    std::string text = fp8.recipe().config().describe() + ": converted " + std::to_string(conversion.converted.size()) +
                       " of " + std::to_string(conversion.converted.size() + conversion.kept.size()) +
                       " Linear layers (" + std::to_string(weights) + " weights)";
    for (size_t i = 0; i < conversion.converted.size(); ++i)
        text += (i ? ", " : ": ") + conversion.converted[i];
    for (size_t i = 0; i < conversion.kept.size(); ++i)
        text += (i ? "; " : "; kept: ") + conversion.kept[i].first + " (" + conversion.kept[i].second + ")";
    std::cout << text << std::endl;
}

// TE's scaling state (Fp8Recipe::scalingState): the same on every rank, since the current amaxes
// are all-reduced (MAX) before each update, so rank 0 writes it.
constexpr const char *kFp8StateFile = "fp8_state.safetensors";

Result<void> saveFp8State(const Fp8Training &fp8, const std::string &path)
{
    const Fp8Recipe::StateFile state = fp8.recipe().scalingState();
    if (state.tensors.empty())
        return {};
    std::vector<bigmodel::TensorToWrite> tensors;
    for (const auto &[name, values] : state.tensors) {
        bigmodel::TensorToWrite tensor;
        tensor.name = name;
        tensor.dtype = DType::F32;
        tensor.shape = {int64_t(values.size())};
        tensor.data = values.data();
        tensor.size = uint64_t(values.size() * sizeof(float));
        tensors.push_back(tensor);
    }
    bigmodel::Metadata metadata(state.metadata.begin(), state.metadata.end());
    metadata["format"] = "pt";
    return bigmodel::writeSafetensors(path, std::move(tensors), metadata);
}

// A checkpoint without the state (saved before it was kept, or by a run in another precision)
// resumes with a warning naming what starts afresh, as loading a model whose FP8 layers carry no
// saved scaling state does; one that does not fit this run is refused.
Result<void> loadFp8State(Fp8Training &fp8, const fs::path &path, bool report)
{
    const std::string fresh = fp8.recipe().freshStateDescription();
    if (fresh.empty())
        return {};
    if (!fs::exists(path)) {
        if (report)
            log::warning("checkpoint", fp8.recipe().config().describe() + ": " + path.parent_path().string() +
                                           " has no " + kFp8StateFile + ": " + fresh +
                                           "; the resumed run does not continue like an uninterrupted one");
        return {};
    }
    auto file = bigmodel::SafetensorsFile::open(path.string());
    if (!file)
        return tl::unexpected(file.error());
    Fp8Recipe::StateFile state;
    state.metadata.insert((*file)->metadata().begin(), (*file)->metadata().end());
    for (const auto &tensor : (*file)->tensors()) {
        if (tensor.dtype != DType::F32)
            return makeError(ErrorCode::InvalidInput, "loadState: tensor " + tensor.name + " is not F32",
                             path.string());
        std::vector<float> values(tensor.elementCount());
        std::memcpy(values.data(), tensor.data, values.size() * sizeof(float));
        state.tensors[tensor.name] = std::move(values);
    }
    if (const std::string refused = fp8.recipe().restoreScalingState(state); !refused.empty())
        return makeError(ErrorCode::InvalidInput, "loadState: " + fp8.recipe().config().describe() + ": " + refused,
                         path.string());
    return {};
}

} // namespace

MixedPrecisionPolicy::MixedPrecisionPolicy(MixedPrecision mode, const torch::Device &device)
    : m_mode(mode), m_device(device)
{}

MixedPrecisionPolicy::~MixedPrecisionPolicy() = default;

Result<std::unique_ptr<MixedPrecisionPolicy>> MixedPrecisionPolicy::create(MixedPrecision mode,
                                                                           const torch::Device &device,
                                                                           const std::string &cpuReason)
{
    std::unique_ptr<MixedPrecisionPolicy> policy(new MixedPrecisionPolicy(mode, device));
    if (mode == MixedPrecision::Fp16) {
        // fp16 autocast and dynamic loss scaling are the CUDA recipe; on CPU the runtime says so
        // rather than training in another precision.
        if (!device.is_cuda())
            return makeError(ErrorCode::Unsupported, "mixed precision fp16 needs a GPU: this rank runs on CPU (" +
                                                         cpuReason + "); use bf16 on CPU");
        policy->m_scaler = std::make_unique<GradScaler>(device);
    }
    return policy;
}

Result<void> MixedPrecisionPolicy::enableFp8(const Result<Fp8Config> &config, ShardingPlan &plan, ReduceMax reduceMax)
{
    if (m_mode != MixedPrecision::Fp8)
        return {};
    // The recipe ACCELERATE_FP8_* asks for, or the reason it cannot run: never bf16 instead.
    if (!config)
        return tl::unexpected(config.error());
    auto fp8 = Fp8Training::create(*config, std::move(reduceMax));
    if (!fp8)
        return tl::unexpected(fp8.error());
    if (auto fits = (*fp8)->recipe().checkSharding(plan); !fits)
        return fits;
    if (auto gemm = checkFp8Device(m_device, *config); !gemm)
        return gemm;
    m_fp8 = std::move(*fp8);
    return {};
}

bool MixedPrecisionPolicy::autocasts() const
{
    return m_mode == MixedPrecision::Bf16 || m_mode == MixedPrecision::Fp8 || m_mode == MixedPrecision::Fp16;
}

std::shared_ptr<void> MixedPrecisionPolicy::scope()
{
    if (!m_fp8)
        return nullptr;
    return std::make_shared<Fp8Training::Scope>(m_fp8->scope());
}

double MixedPrecisionPolicy::lossScale() const
{
    return m_scaler ? m_scaler->scaleValue() : 0.0;
}

torch::Tensor MixedPrecisionPolicy::scaleLoss(const torch::Tensor &loss) const
{
    return m_scaler ? m_scaler->scale(loss) : loss;
}

void MixedPrecisionPolicy::unscale(const std::vector<torch::Tensor> &parameters)
{
    if (m_scaler)
        m_scaler->unscale(parameters);
}

bool MixedPrecisionPolicy::step(torch::optim::Optimizer &optimizer)
{
    if (!m_scaler) {
        optimizer.step();
        return true;
    }
    std::vector<torch::Tensor> parameters;
    for (auto &group : optimizer.param_groups())
        parameters.insert(parameters.end(), group.params().begin(), group.params().end());
    // A step with inf/NaN gradients is skipped (the scale backs off), as GradScaler.step does.
    return m_scaler->step(parameters, [&optimizer] { optimizer.step(); });
}

void MixedPrecisionPolicy::acceptModel(size_t index) const
{
    // FP8 converts one model's Linear layers and scales them as one set (Accelerate too takes one
    // model for TransformerEngine and MS-AMP).
    if (m_fp8 && index > 0)
        throw std::invalid_argument("prepareModel: mixed precision fp8 (" + m_fp8->recipe().config().describe() +
                                    ") trains one model; preparing a second model (model " + std::to_string(index) +
                                    ") is not implemented under fp8");
}

void MixedPrecisionPolicy::convertModel(const std::shared_ptr<torch::nn::Module> &model, bool report)
{
    if (!m_fp8)
        return;
    const Fp8Training::Conversion conversion = m_fp8->convert(model);
    if (report)
        reportFp8Conversion(*m_fp8, conversion);
}

torch::optim::Optimizer &MixedPrecisionPolicy::prepareOptimizer(torch::optim::Optimizer &optimizer, bool report)
{
    if (!m_fp8)
        return optimizer;
    auto own = m_fp8->recipe().wrapOptimizer(optimizer, report);
    if (!own)
        return optimizer;
    m_optimizer = std::move(own);
    return *m_optimizer;
}

int64_t MixedPrecisionPolicy::optimizerStateBytes() const
{
    return m_fp8 ? m_fp8->recipe().optimizerStateBytes() : 0;
}

std::shared_ptr<PrecisionGradientReduction> MixedPrecisionPolicy::gradientReduction(Collectives &group)
{
    if (!m_fp8 || m_fp8->convertedWeights().empty())
        return nullptr;
    m_reduction = m_fp8->recipe().reduceGradients(m_fp8->convertedWeights(), group);
    return m_reduction;
}

PrecisionWeightGather MixedPrecisionPolicy::weightGather(const ShardingPlan &plan) const
{
    if (!m_fp8 || !m_fp8->recipe().gathersWeightsInFp8(plan))
        return {};
    return {m_fp8->convertedWeights(), m_fp8.get()};
}

void MixedPrecisionPolicy::afterBackward()
{
    if (m_fp8)
        m_fp8->afterBackward();
}

void MixedPrecisionPolicy::afterOptimizerStep()
{
    if (m_fp8)
        m_fp8->afterOptimizerStep();
}

Result<void> MixedPrecisionPolicy::saveState(const std::string &folder) const
{
    if (!m_fp8)
        return {};
    return saveFp8State(*m_fp8, (fs::path(folder) / kFp8StateFile).string());
}

Result<void> MixedPrecisionPolicy::loadState(const std::string &folder, bool report)
{
    if (!m_fp8)
        return {};
    return loadFp8State(*m_fp8, fs::path(folder) / kFp8StateFile, report);
}

} // namespace accel::runtime
