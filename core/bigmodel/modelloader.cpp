#include "core/bigmodel/modelloader.h"

#include <algorithm>
#include <filesystem>
#include <unordered_set>

namespace accel::bigmodel {

namespace fs = std::filesystem;

namespace {

bool isHeadName(const std::string &name)
{
    return name.rfind("lm_head.", 0) == 0 || name.rfind("embed_out.", 0) == 0 || name.rfind("score.", 0) == 0;
}

} // namespace

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

    ModelStructure reference;
    if (config)
        reference = buildModelStructure(*config);
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
        const std::string embed = config->modelType == "gpt2" ? "transformer.wte.weight" : "model.embed_tokens.weight";
        const bool hasHead = present.count("lm_head.weight") > 0;
        if ((config->tieWordEmbeddings || !hasHead) && present.count(embed)) {
            if (!hasHead) {
                s.addModule("lm_head", "Linear");
                s.addTensor({"lm_head.weight", DType::F32, {}, 0, false, {}});
            }
            s.tie("lm_head.weight", embed);
        }
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
    if (!fs::exists(path, ec))
        return makeError(ErrorCode::NotFound, "no such file or folder", given);

    const bool isConfig =
        path.filename() == "config.json" || (!fs::is_directory(path, ec) && path.extension() == ".json" &&
                                             path.string().find(".index.json") == std::string::npos);
    const fs::path configPath = isConfig ? path : folder / "config.json";
    if (fs::is_regular_file(configPath, ec)) {
        auto config = readModelConfig(configPath.string());
        if (!config && (isConfig || config.error().code != ErrorCode::Unsupported))
            return tl::unexpected(config.error());
        if (config)
            model.config = *config;
        else
            model.structure.warnings.push_back(config.error().toString() + "; using checkpoint names only");
    }
    if (isConfig) {
        model.structure = buildModelStructure(*model.config);
        model.name = fs::absolute(path, ec).parent_path().filename().string();
        return model;
    }
    auto checkpoint = Checkpoint::open(given);
    if (!checkpoint) {
        if (model.config && fs::is_directory(path, ec) && checkpoint.error().code == ErrorCode::NotFound) {
            model.structure = buildModelStructure(*model.config);
            return model;
        }
        return tl::unexpected(checkpoint.error());
    }
    std::vector<std::string> warnings = std::move(model.structure.warnings);
    model.structure = structureFromCheckpoint(*checkpoint, model.config);
    model.structure.warnings.insert(model.structure.warnings.begin(), warnings.begin(), warnings.end());
    model.checkpoint = std::move(*checkpoint);
    return model;
}

} // namespace accel::bigmodel
