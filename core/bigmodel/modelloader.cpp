#include "core/bigmodel/modelloader.h"

#include "core/bigmodel/hubmodel.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <unordered_set>

namespace accel::bigmodel {

namespace fs = std::filesystem;

namespace {

bool isHeadName(const std::string &name)
{
    return name.rfind("lm_head.", 0) == 0 || name.rfind("embed_out.", 0) == 0 || name.rfind("score.", 0) == 0;
}

// The number of numbered blocks ("model.layers.N." or "h.N.") the checkpoint holds, -1 when its
// names have none.
int64_t checkpointLayerCount(const Checkpoint &checkpoint)
{
    int64_t count = -1;
    for (const TensorInfo *t : checkpoint.tensors()) {
        for (const char *marker : {"layers.", "h."}) {
            const size_t at = t->name.find(marker);
            if (at == std::string::npos || (at > 0 && t->name[at - 1] != '.'))
                continue;
            size_t digits = at + std::strlen(marker);
            int64_t index = 0;
            while (digits < t->name.size() && std::isdigit(static_cast<unsigned char>(t->name[digits])) &&
                   index < (int64_t(1) << 40))
                index = index * 10 + (t->name[digits++] - '0');
            if (digits > at + std::strlen(marker) && digits < t->name.size() && t->name[digits] == '.')
                count = std::max(count, index + 1);
        }
    }
    return count;
}

// The family's modules that own no tensor anywhere below them (dropouts, activations) are not in
// any checkpoint, yet the model has them: a split parent's work list and the device map name them
// as Accelerate does. Each goes under its parent (when the checkpoint gave that parent) at the
// family's position among its siblings, parents before children.
void addModulesWithoutTensors(ModelStructure &s, const ModelStructure &reference)
{
    std::unordered_set<std::string> holding;
    for (const ModelTensor &t : reference.tensors()) {
        for (std::string p = parentName(t.name); !p.empty(); p = parentName(p))
            holding.insert(p);
    }
    for (const ModuleInfo &m : reference.modules()) {
        if (m.name.empty() || holding.count(m.name) || s.module(m.name) || !s.module(parentName(m.name)))
            continue;
        const std::vector<std::string> &siblings = reference.module(parentName(m.name))->children;
        std::string before;
        for (auto it = std::find(siblings.begin(), siblings.end(), m.name); it != siblings.end(); ++it) {
            if (*it != m.name && s.module(*it)) {
                before = *it;
                break;
            }
        }
        s.insertModule(m.name, m.className, before);
    }
}

} // namespace

Result<void> checkLayersAgainstCheckpoint(int64_t declared, const std::string &modelType, const std::string &configPath,
                                          const Checkpoint &checkpoint)
{
    const int64_t held = checkpointLayerCount(checkpoint);
    if (held < 0 || declared <= held)
        return {};
    return makeError(ErrorCode::InvalidInput,
                     layerCountKey(modelType) + ": " + std::to_string(declared) +
                         " layers declared but the checkpoint " +
                         (checkpoint.isSharded() ? checkpoint.indexPath() : checkpoint.shards().front()->path()) +
                         " holds " + std::to_string(held),
                     configPath);
}

ModelStructure structureFromCheckpoint(const Checkpoint &checkpoint, const std::optional<ModelConfig> &config)
{
    std::vector<const TensorInfo *> tensors = checkpoint.tensors();
    // GPT-2 checkpoints on the Hub store the base model's names ("h.0.attn..."); the causal-LM
    // model registers them under "transformer.".
    std::string prefix;
    if (config && config->modelType == "gpt2" && std::none_of(tensors.begin(), tensors.end(), [](const TensorInfo *t) {
            return t->name.rfind("transformer.", 0) == 0;
        }))
        prefix = "transformer.";

    // Mixtral checkpoints name one module per expert; transformers 5 fuses them when it loads.
    const bool perExpert = std::any_of(tensors.begin(), tensors.end(), [](const TensorInfo *t) {
        return t->name.find(".block_sparse_moe.") != std::string::npos;
    });
    ModelStructure reference;
    if (config)
        reference =
            buildModelStructure(*config, std::nullopt, perExpert ? MixtralLayout::PerExpert : MixtralLayout::Fused);
    std::unordered_map<std::string, size_t> order;
    for (size_t i = 0; i < reference.tensors().size(); ++i)
        order.emplace(reference.tensors()[i].name, i);
    std::vector<std::pair<std::string, const TensorInfo *>> named;
    for (const TensorInfo *t : tensors)
        named.emplace_back(prefix + t->name, t);
    // Known names in the family's registration order, then the rest in natural order with
    // output heads last (that is where models register them).
    std::sort(named.begin(), named.end(), [&](const auto &a, const auto &b) {
        const auto ia = order.find(a.first), ib = order.find(b.first);
        const bool ka = ia != order.end(), kb = ib != order.end();
        if (ka && kb)
            return ia->second < ib->second;
        if (ka != kb)
            return ka;
        const bool ha = isHeadName(a.first), hb = isHeadName(b.first);
        if (ha != hb)
            return hb;
        return naturalLess(a.first, b.first);
    });

    ModelStructure s;
    if (config) {
        s.family = config->modelType;
        s.architecture = config->architecture;
        s.noSplitClasses = reference.noSplitClasses;
        s.addModule("", config->architecture);
    }
    std::unordered_set<std::string> present;
    for (const auto &[name, info] : named) {
        const std::string parent = parentName(name);
        if (const ModuleInfo *m = reference.module(parent))
            s.addModule(parent, m->className);
        // Keep the family's class names on every ancestor.
        for (std::string p = parentName(parent); !p.empty(); p = parentName(p)) {
            if (const ModuleInfo *m = reference.module(p))
                s.addModule(p, m->className);
        }
        const ModelTensor *known = reference.tensor(name);
        s.addTensor({name, info->dtype, info->shape, 0, known ? known->buffer : false, {}});
        present.insert(name);
        if (known && known->shape != info->shape)
            s.warnings.push_back("tensor \"" + name +
                                 "\" has a different shape in the checkpoint than config.json implies");
    }
    if (config) {
        // Buffers the checkpoint does not store (rotary frequencies) still occupy memory.
        for (const ModelTensor &t : reference.tensors()) {
            if (t.buffer && !present.count(t.name)) {
                s.addModule(parentName(t.name), reference.module(parentName(t.name))->className);
                s.addTensor(t);
            }
        }
        const std::string embed = embeddingModuleName(config->modelType) + ".weight";
        const bool hasHead = present.count("lm_head.weight") > 0;
        if ((config->tieWordEmbeddings || !hasHead) && present.count(embed)) {
            if (!hasHead) {
                s.addModule("lm_head", "Linear");
                s.addTensor({"lm_head.weight", DType::F32, {}, 0, false, {}});
            }
            s.tie("lm_head.weight", embed);
        }
        addModulesWithoutTensors(s, reference);
    }
    return s;
}

Result<LoadedModel> loadModel(const std::string &given)
{
    std::error_code ec;
    LoadedModel model;
    fs::path path(given);
    fs::path folder = fs::is_directory(path, ec) ? path : path.parent_path();
    model.name = (fs::is_directory(path, ec) ? fs::absolute(path, ec).lexically_normal() : path).filename().string();
    if (model.name.empty())
        model.name = fs::absolute(path, ec).lexically_normal().parent_path().filename().string();
    if (!fs::exists(path, ec)) {
        if (auto id = parseHubModelId(given)) {
            auto hub = loadHubModel(*id, hubSettingsFromEnvironment());
            // A mistyped local path reads as an id too: say that it was not found here either.
            if (!hub && (hub.error().code == ErrorCode::NotFound || hub.error().code == ErrorCode::Failed))
                hub.error().message += " (nor is there a file or folder " + given + " here)";
            return hub;
        }
        return makeError(ErrorCode::NotFound, "no such file or folder", given);
    }

    const bool isConfig =
        path.filename() == "config.json" || (!fs::is_directory(path, ec) && path.extension() == ".json" &&
                                             path.string().find(".index.json") == std::string::npos);
    const fs::path configPath = isConfig ? path : folder / "config.json";
    if (fs::exists(configPath, ec)) { // a FIFO or folder there is an error, not skipped
        auto config = readModelConfig(configPath.string());
        if (!config && (isConfig || config.error().code != ErrorCode::Unsupported))
            return tl::unexpected(config.error());
        if (config)
            model.config = *config;
        else
            model.structure.warnings.push_back(config.error().toString() + "; using checkpoint names only");
    }
    if (isConfig) {
        model.name = fs::absolute(path, ec).parent_path().filename().string();
        return assembleModel(std::move(model), std::nullopt);
    }
    auto checkpoint = Checkpoint::open(given);
    if (!checkpoint) {
        if (model.config && fs::is_directory(path, ec) && checkpoint.error().code == ErrorCode::NotFound)
            return assembleModel(std::move(model), std::nullopt);
        return tl::unexpected(checkpoint.error());
    }
    return assembleModel(std::move(model), std::move(*checkpoint));
}

Result<LoadedModel> assembleModel(LoadedModel model, std::optional<Checkpoint> checkpoint)
{
    if (!checkpoint) {
        if (!model.config)
            return makeError(ErrorCode::NotFound, "neither a checkpoint nor config.json", model.name);
        std::vector<std::string> warnings = std::move(model.structure.warnings);
        model.structure = buildModelStructure(*model.config);
        model.structure.warnings.insert(model.structure.warnings.begin(), warnings.begin(), warnings.end());
        return model;
    }
    if (model.config) {
        // Before the config's structure is built: its size must be the checkpoint's, not any number.
        const ModelConfig &c = *model.config;
        if (auto agrees = checkLayersAgainstCheckpoint(c.numLayers, c.modelType, c.path, *checkpoint); !agrees)
            return tl::unexpected(agrees.error());
    }
    std::vector<std::string> warnings = std::move(model.structure.warnings);
    model.structure = structureFromCheckpoint(*checkpoint, model.config);
    model.structure.warnings.insert(model.structure.warnings.begin(), warnings.begin(), warnings.end());
    model.checkpoint = std::move(*checkpoint);
    return model;
}

} // namespace accel::bigmodel
