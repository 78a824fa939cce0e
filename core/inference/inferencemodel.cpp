#include "core/inference/inferencemodel.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/devicemap.h"
#include "core/bigmodel/machinebudgets.h"
#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modelloader.h"
#include "core/common/log.h"
#include "core/inference/causallm.h"

#include <ATen/Parallel.h>

namespace accel::inference {

struct InferenceModel::Storage {
    std::optional<bigmodel::Checkpoint> checkpoint;
};

InferenceModel::~InferenceModel() = default;

const ModelConfig &InferenceModel::config() const
{
    return m_lm->config();
}

namespace {

Result<DeviceMap> autoDeviceMap(const std::string &modelDir, const std::string &maxMemory)
{
    auto planned = bigmodel::loadModel(modelDir);
    if (!planned)
        return tl::unexpected(planned.error());
    bigmodel::DeviceMapOptions options;
    if (!maxMemory.empty()) {
        auto budgets = bigmodel::parseMaxMemory(maxMemory);
        if (!budgets)
            return tl::unexpected(budgets.error());
        options.maxMemory = *budgets;
    } else {
        auto budgets = bigmodel::machineBudgets("", "");
        if (!budgets)
            return tl::unexpected(budgets.error());
        options.maxMemory = *budgets;
        options.userGaveMaxMemory = false;
    }
    return inferAutoDeviceMap(planned->structure, options).map;
}

} // namespace

Result<std::unique_ptr<InferenceModel>> InferenceModel::load(const std::string &modelDir, const LoadOptions &options)
{
    if (options.threads > 0)
        at::set_num_threads(options.threads);
    auto config = loadModelConfig(modelDir);
    if (!config)
        return tl::unexpected(config.error());
    for (const auto &w : config->warnings)
        accel::log::warning("inference", modelDir + "/config.json: " + w);
    auto checkpointPath = bigmodel::resolveCheckpointPath(modelDir);
    if (!checkpointPath)
        return tl::unexpected(checkpointPath.error());
    auto checkpoint = bigmodel::Checkpoint::open(*checkpointPath);
    if (!checkpoint)
        return tl::unexpected(checkpoint.error());
    // Before any module is built: a config.json declaring more layers than the weights hold.
    if (auto agrees = bigmodel::checkLayersAgainstCheckpoint(
            config->numLayers, config->modelType == "gpt2" ? "n_layer" : "num_hidden_layers", modelDir + "/config.json",
            *checkpoint);
        !agrees)
        return tl::unexpected(agrees.error());

    DispatchOptions dispatch = options.dispatch;
    if (options.deviceMap == "auto") {
        auto map = autoDeviceMap(modelDir, options.maxMemory);
        if (!map)
            return tl::unexpected(map.error());
        dispatch.deviceMap = *map;
    } else if (options.deviceMap == "cpu") {
        dispatch.deviceMap = {{"", "cpu"}};
    } else if (!options.deviceMap.empty()) {
        auto map = parseDeviceMapJson(options.deviceMap);
        if (!map)
            return tl::unexpected(map.error());
        dispatch.deviceMap = *map;
    }

    std::unique_ptr<InferenceModel> model(new InferenceModel);
    model->m_modelDir = modelDir;
    model->m_storage = std::make_unique<Storage>();
    model->m_storage->checkpoint = std::move(*checkpoint);
    auto lm = createCausalLM(*config);
    if (!lm)
        return tl::unexpected(lm.error());
    model->m_lm = std::move(*lm);
    auto report = dispatchCheckpoint(*model->m_lm, *model->m_storage->checkpoint, dispatch);
    if (!report)
        return tl::unexpected(report.error());
    model->m_report = std::move(*report);
    model->m_deviceMap = dispatch.deviceMap.empty() ? DeviceMap{{"", "cpu"}} : dispatch.deviceMap;
    return model;
}

} // namespace accel::inference
