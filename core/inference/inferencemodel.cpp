#include "core/inference/inferencemodel.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/devicemap.h"
#include "core/bigmodel/modelloader.h"
#include "core/common/jsondocument.h"
#include "core/common/log.h"
#include "core/inference/causallm.h"
#include "core/inference/devicemapspec.h"
#include "core/inference/lora.h"
#include "core/inference/torchtensors.h"

#include <ATen/Parallel.h>

#include <nlohmann/json.hpp>

namespace accel::inference {

struct InferenceModel::Storage {
    std::optional<bigmodel::Checkpoint> checkpoint;
    // The model's tree as `accel device-map` plans it: planned maps name its modules.
    std::optional<bigmodel::ModelStructure> planned;
};

InferenceModel::~InferenceModel() = default;

const ModelConfig &InferenceModel::config() const
{
    return m_lm->config();
}

Result<std::unique_ptr<InferenceModel>> InferenceModel::load(const std::string &modelDir, const LoadOptions &options)
{
    if (options.threads > 0)
        at::set_num_threads(options.threads);
    auto config = loadModelConfig(modelDir);
    if (!config)
        return tl::unexpected(config.error());
    auto checkpointPath = bigmodel::resolveCheckpointPath(modelDir);
    if (!checkpointPath)
        return tl::unexpected(checkpointPath.error());
    auto checkpoint = bigmodel::Checkpoint::open(*checkpointPath);
    if (!checkpoint)
        return tl::unexpected(checkpoint.error());
    // Before any module is built: a config.json declaring more layers than the weights hold.
    if (auto agrees = bigmodel::checkLayersAgainstCheckpoint(config->numLayers, config->modelType,
                                                             modelDir + "/config.json", *checkpoint);
        !agrees)
        return tl::unexpected(agrees.error());

    // Mixtral / Qwen2-MoE experts as transformers 5 holds them in memory (3-D tensors) rather than
    // per expert (the Hub's layout, and what save_pretrained writes).
    for (const bigmodel::TensorInfo *info : checkpoint->tensors())
        if (info->name.find(".experts.gate_up_proj") != std::string::npos)
            config->moe.fused = true;
    DispatchOptions dispatch = options.dispatch;
    std::unique_ptr<InferenceModel> model(new InferenceModel);
    model->m_storage = std::make_unique<Storage>();
    // The same tree `accel device-map` plans (config.json and the checkpoint's headers), so that
    // the maps it writes, and the strategies planned here, name what the dispatcher accepts.
    if (auto planConfig = bigmodel::readModelConfig(modelDir + "/config.json"))
        model->m_storage->planned = bigmodel::structureFromCheckpoint(*checkpoint, *planConfig);
    const QuantizationOptions &quantization = options.quantization;
    if (!config->quantizationConfig.empty() &&
        (!quantization.method.empty() || quantization.skipModules || !quantization.keepInFp32Modules.empty()))
        return makeError(ErrorCode::InvalidInput,
                         std::string(!quantization.method.empty() ? "quantization " + quantization.method
                                     : quantization.skipModules   ? "skip_modules"
                                                                  : "keep_in_fp32_modules") +
                             ": the checkpoint is quantized already (config.json's quantization_config); its "
                             "quantized layers are the ones it stores",
                         modelDir + "/config.json");
    if (quantization.method.empty() && quantization.skipModules)
        return makeError(ErrorCode::InvalidInput,
                         "skip_modules: only with quantization int8, nf4 or fp4 (it names modules left unquantized)");
    // A strategy plans with the bytes the quantized layers will hold, as accel device-map
    // --quantization plans them (one sizing for the plan and the load).
    if (!options.deviceMap.empty()) {
        DeviceMapRequest request{options.deviceMap, options.maxMemory, dispatch.computeDType, std::nullopt};
        if (!quantization.method.empty())
            request.quantization = quantization;
        auto map = resolveDeviceMap(request, model->m_storage->planned ? &*model->m_storage->planned : nullptr);
        if (!map)
            return tl::unexpected(map.error());
        dispatch.deviceMap = std::move(map->map);
        model->m_warnings = std::move(map->warnings);
    }
    if (model->m_storage->planned)
        dispatch.plannedStructure = &*model->m_storage->planned;
    model->m_modelDir = modelDir;
    model->m_storage->checkpoint = std::move(*checkpoint);
    auto lm = createCausalLM(*config);
    if (!lm)
        return tl::unexpected(lm.error());
    model->m_lm = std::move(*lm);
    if (!config->quantizationConfig.empty()) {
        // The config's quantization_config, as read through the guard with the rest of config.json.
        auto quantization = jsonutil::parseJson(config->quantizationConfig, modelDir + "/config.json");
        if (!quantization)
            return tl::unexpected(quantization.error());
        auto adopted = adoptQuantizedCheckpoint(*model->m_lm, *model->m_storage->checkpoint, *quantization,
                                                modelDir + "/config.json");
        if (!adopted)
            return tl::unexpected(adopted.error());
        model->m_quantization = std::move(*adopted);
    }
    auto report = dispatchCheckpoint(*model->m_lm, *model->m_storage->checkpoint, dispatch);
    if (!report)
        return tl::unexpected(report.error());
    model->m_report = std::move(*report);
    try {
        if (!config->quantizationConfig.empty()) {
            if (auto built = buildQuantizedLayers(*model->m_lm, model->m_quantization); !built)
                return tl::unexpected(built.error());
        } else if (!options.quantization.method.empty() || !options.quantization.keepInFp32Modules.empty()) {
            auto quantized = quantizeModel(*model->m_lm, options.quantization);
            if (!quantized)
                return tl::unexpected(quantized.error());
            model->m_quantization = std::move(*quantized);
        }
    } catch (const c10::Error &e) {
        return makeError(ErrorCode::Failed, std::string("quantization: ") + e.what_without_backtrace(), modelDir);
    }
    model->m_report.warnings.insert(model->m_report.warnings.end(), model->m_quantization.warnings.begin(),
                                    model->m_quantization.warnings.end());
    for (const auto &w : config->warnings)
        model->m_warnings.push_back("config.json: " + w);
    model->m_warnings.insert(model->m_warnings.end(), model->m_report.warnings.begin(), model->m_report.warnings.end());
    for (const auto &w : model->m_warnings)
        accel::log::warning("inference", modelDir + ": " + w);
    model->m_deviceMap = dispatch.deviceMap.empty() ? DeviceMap{{"", "cpu"}} : dispatch.deviceMap;
    // Float32 weights on the CPU: their prompt products' kernel, measured once per process.
    for (const NamedParameter &p : model->m_lm->namedParameters()) {
        const at::Tensor &v = p.parameter->value;
        if (v.defined() && v.dim() == 2 && v.scalar_type() == at::kFloat && v.is_cpu()) {
            model->m_promptKernel = choosePromptKernelAtLoad(*config);
            break;
        }
    }
    if (!options.adapterDir.empty()) {
        std::optional<at::ScalarType> dtype;
        if (!dispatch.computeDType.empty())
            if (auto parsed = parseComputeDType(dispatch.computeDType))
                dtype = *parsed;
        auto adapted = loadLoraAdapter(*model->m_lm, options.adapterDir, dtype);
        if (!adapted)
            return tl::unexpected(adapted.error());
        model->m_adapted = std::move(*adapted);
    }
    return model;
}

} // namespace accel::inference
