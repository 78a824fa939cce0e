#include "core/inference/lora.h"

#include "core/bigmodel/loratargets.h"
#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/inference/torchtensors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace accel::inference {

namespace {

constexpr const char *kAdapterPrefix = "base_model.model.";
constexpr const char *kConfigFile = "adapter_config.json";
constexpr const char *kWeightsFile = "adapter_model.safetensors";

bool endsWith(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Every module of the tree with its full name, parents first (the LoRA branches' own Linears left out).
void collectModules(Module &module, const std::string &name, std::vector<std::pair<std::string, Module *>> &out)
{
    out.emplace_back(name, &module);
    for (auto &[local, child] : module.children()) {
        if (local == "lora_A" || local == "lora_B")
            continue;
        collectModules(*child, name.empty() ? local : name + "." + local, out);
    }
}

std::string localName(const std::string &name)
{
    const auto dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::string joined(const std::set<std::string> &names)
{
    std::string text;
    for (const auto &n : names)
        text += (text.empty() ? "" : ", ") + n;
    return text;
}

// peft's lora_A initialisation (kaiming-uniform with a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in))), in float32.
at::Tensor drawLoraA(int64_t rank, int64_t inFeatures, at::Generator &generator)
{
    const double bound = 1.0 / std::sqrt(double(inFeatures));
    return at::empty({rank, inFeatures}, at::TensorOptions().dtype(at::kFloat)).uniform_(-bound, bound, generator);
}

// The base weight replaced by W + scaling * B @ A for the forward (mergeLoraInEachForward).
class MergedLoraHook : public ForwardHook {
public:
    void preForward(Module &module) override
    {
        auto &layer = dynamic_cast<LoraAdaptable &>(module);
        Parameter *weight = layer.baseWeight();
        m_base.push_back(weight->value);
        const at::Tensor delta = at::matmul(layer.loraB()->baseWeight()->value, layer.loraA()->baseWeight()->value) *
                                 layer.loraSettings().scaling;
        weight->value = weight->value + delta.to(weight->value.scalar_type());
    }
    void postForward(Module &module) override
    {
        dynamic_cast<LoraAdaptable &>(module).baseWeight()->value = m_base.back();
        m_base.pop_back();
    }

private:
    std::vector<at::Tensor> m_base;
};

} // namespace

double LoraConfig::scaling() const
{
    return rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank);
}

bool isLoraParameter(const std::string &name)
{
    return name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos;
}

Result<std::vector<std::pair<std::string, LoraAdaptable *>>> loraTargets(CausalLM &model, const LoraConfig &config)
{
    std::vector<std::pair<std::string, Module *>> modules;
    collectModules(model, "", modules);
    std::set<std::string> adaptable;
    for (const auto &[name, module] : modules) {
        if (dynamic_cast<LoraAdaptable *>(module))
            adaptable.insert(localName(name));
    }
    if (config.targetModules.empty())
        return makeError(ErrorCode::InvalidInput,
                         "lora.target_modules: missing (a list of layer names, e.g. [q_proj, v_proj]; this model's "
                         "adaptable layers: " +
                             joined(adaptable) + "; or all-linear)");
    std::vector<std::pair<std::string, LoraAdaptable *>> targets;
    const bool allLinear = config.targetModules.size() == 1 && config.targetModules.front() == bigmodel::kLoraAllLinear;
    for (const std::string &entry : config.targetModules) {
        if (entry.empty())
            return makeError(ErrorCode::InvalidInput, "lora.target_modules: an entry is empty");
        bool matched = false;
        for (const auto &[name, module] : modules) {
            if (name.empty())
                continue;
            const bool matches = allLinear ? bigmodel::loraAllLinearTakes(name) && dynamic_cast<LoraAdaptable *>(module)
                                           : bigmodel::loraEntryMatches(name, entry);
            if (!matches)
                continue;
            auto *layer = dynamic_cast<LoraAdaptable *>(module);
            if (!layer)
                return makeError(ErrorCode::InvalidInput,
                                 "lora.target_modules: " + entry + " matches " + name + ", a " + module->typeName() +
                                     ", which LoRA cannot adapt (adaptable layers: " + joined(adaptable) + ")");
            matched = true;
            if (std::none_of(targets.begin(), targets.end(), [&](const auto &t) { return t.second == layer; }))
                targets.emplace_back(name, layer);
        }
        if (!matched)
            return makeError(ErrorCode::InvalidInput,
                             "lora.target_modules: " + entry +
                                 " matches no layer of the model (adaptable layers: " + joined(adaptable) + ")");
    }
    return targets;
}

Result<std::vector<std::string>> attachLora(CausalLM &model, const LoraConfig &config, at::Generator generator)
{
    if (config.rank <= 0)
        return makeError(ErrorCode::InvalidInput,
                         "lora.r: expected a positive rank; got " + std::to_string(config.rank));
    auto targets = loraTargets(model, config);
    if (!targets)
        return tl::unexpected(targets.error());
    std::vector<std::string> names;
    at::NoGradGuard noGrad;
    for (auto &[name, layer] : *targets) {
        layer->attachLora({config.rank, config.scaling(), config.dropout});
        layer->loraA()->baseWeight()->value =
            drawLoraA(config.rank, layer->inFeatures(), generator).to(layer->executionDevice());
        layer->loraB()->baseWeight()->value =
            at::zeros({layer->outFeatures(), config.rank},
                      at::TensorOptions().dtype(at::kFloat).device(layer->executionDevice()));
        names.push_back(name);
    }
    return names;
}

Result<void> redrawLoraA(CausalLM &model, const LoraConfig &config, at::Generator generator,
                         const std::set<std::string> &splitInputs, int rank, int size)
{
    auto targets = loraTargets(model, config);
    if (!targets)
        return tl::unexpected(targets.error());
    at::NoGradGuard noGrad;
    for (auto &[name, layer] : *targets) {
        at::Tensor &value = layer->loraA()->baseWeight()->value;
        const bool split = splitInputs.count(name) > 0;
        at::Tensor whole = drawLoraA(config.rank, layer->inFeatures() * (split ? size : 1), generator);
        if (split)
            whole = whole.narrow(1, rank * layer->inFeatures(), layer->inFeatures());
        value.copy_(whole);
    }
    return {};
}

void mergeLoraInEachForward(LoraAdaptable &layer)
{
    layer.addHook(std::make_shared<MergedLoraHook>());
}

Result<void> saveLoraAdapter(CausalLM &model, const LoraConfig &config, const std::string &dir,
                             const std::string &baseModel)
{
    std::vector<std::pair<std::string, Module *>> modules;
    collectModules(model, "", modules);
    std::vector<at::Tensor> keep;
    std::vector<bigmodel::TensorToWrite> tensors;
    std::set<std::string> adapted;
    bool transposed = false;
    for (const auto &[name, module] : modules) {
        auto *layer = dynamic_cast<LoraAdaptable *>(module);
        if (!layer || !layer->hasLora())
            continue;
        adapted.insert(localName(name));
        transposed = transposed || layer->weightIsTransposed();
        for (auto [suffix, factor] :
             {std::pair{".lora_A.weight", layer->loraA()}, {".lora_B.weight", layer->loraB()}}) {
            auto value = factor->baseWeight()->value.detach().to(at::kCPU, at::kFloat).contiguous();
            keep.push_back(value);
            tensors.push_back({kAdapterPrefix + name + suffix, bigmodel::DType::F32, value.sizes().vec(),
                               value.data_ptr(), uint64_t(value.nbytes())});
        }
    }
    if (tensors.empty())
        return makeError(ErrorCode::Internal, "saveLoraAdapter: the model has no LoRA branch");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return makeError(ErrorCode::Io, "cannot create the folder: " + ec.message(), dir);
    nlohmann::ordered_json j;
    j["alpha_pattern"] = nlohmann::json::object();
    j["base_model_name_or_path"] = baseModel;
    j["bias"] = "none";
    j["fan_in_fan_out"] = transposed; // GPT-2's Conv1D stores its weight [in, out]
    j["inference_mode"] = true;
    j["init_lora_weights"] = true;
    if (config.alpha == std::floor(config.alpha) && std::abs(config.alpha) < 1e15)
        j["lora_alpha"] = int64_t(config.alpha);
    else
        j["lora_alpha"] = config.alpha;
    j["lora_dropout"] = config.dropout;
    j["modules_to_save"] = nullptr;
    j["peft_type"] = "LORA";
    j["r"] = config.rank;
    j["rank_pattern"] = nlohmann::json::object();
    const bool allLinear = config.targetModules.size() == 1 && config.targetModules.front() == bigmodel::kLoraAllLinear;
    j["target_modules"] = allLinear ? std::vector<std::string>(adapted.begin(), adapted.end()) : config.targetModules;
    j["task_type"] = "CAUSAL_LM";
    j["use_dora"] = false;
    j["use_rslora"] = config.rslora;
    if (auto ok = bigmodel::writeSafetensors(dir + "/" + kWeightsFile, tensors); !ok)
        return ok;
    return fileutil::writeFileAtomic(dir + "/" + kConfigFile, j.dump(2) + "\n");
}

Result<LoraConfig> readLoraConfig(const std::string &dir)
{
    const std::string path = dir + "/" + kConfigFile;
    auto parsed = jsonutil::readJsonFile(path);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const nlohmann::json &j = *parsed;
    if (!j.is_object())
        return makeError(ErrorCode::InvalidInput, "expected a JSON object", path);
    const std::string type = j.value("peft_type", std::string());
    if (type != "LORA")
        return makeError(ErrorCode::Unsupported,
                         "peft_type: " + jsonutil::jsonExcerpt(j.value("peft_type", nlohmann::json())) +
                             " is not supported (LORA only)",
                         path);
    // What peft can describe beyond out += scaling * B(A(x)): refused by name.
    auto isSet = [&](const char *key) {
        auto it = j.find(key);
        return it != j.end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>()) &&
               !(it->is_object() && it->empty()) && !(it->is_array() && it->empty());
    };
    for (const char *key :
         {"use_dora", "lora_bias", "modules_to_save", "rank_pattern", "alpha_pattern", "trainable_token_indices",
          "target_parameters", "alora_invocation_tokens", "layer_replication", "use_qalora", "use_bdlora"}) {
        if (isSet(key))
            return makeError(ErrorCode::Unsupported,
                             std::string(key) + ": " + jsonutil::jsonExcerpt(j[key]) +
                                 " is not implemented (plain LoRA only: out += scaling * lora_B(lora_A(x)))",
                             path);
    }
    if (auto it = j.find("bias"); it != j.end() && !(it->is_string() && it->get<std::string>() == "none"))
        return makeError(ErrorCode::Unsupported,
                         "bias: " + jsonutil::jsonExcerpt(*it) + " is not implemented (only \"none\")", path);
    LoraConfig config;
    auto r = j.find("r");
    if (r == j.end() || !r->is_number_integer() || r->get<int64_t>() <= 0)
        return makeError(ErrorCode::InvalidInput, "r: expected a positive integer", path);
    config.rank = r->get<int64_t>();
    auto alpha = j.find("lora_alpha");
    if (alpha == j.end() || !alpha->is_number())
        return makeError(ErrorCode::InvalidInput, "lora_alpha: expected a number", path);
    config.alpha = alpha->get<double>();
    if (auto it = j.find("lora_dropout"); it != j.end() && it->is_number())
        config.dropout = it->get<double>();
    if (auto it = j.find("use_rslora"); it != j.end() && it->is_boolean())
        config.rslora = it->get<bool>();
    if (auto it = j.find("target_modules"); it != j.end()) {
        if (it->is_string())
            config.targetModules = {it->get<std::string>()};
        else if (it->is_array())
            for (const auto &v : *it)
                if (v.is_string())
                    config.targetModules.push_back(v.get<std::string>());
    }
    return config;
}

Result<std::vector<std::string>> loadLoraAdapter(CausalLM &model, const std::string &dir,
                                                 std::optional<at::ScalarType> dtype)
{
    auto config = readLoraConfig(dir);
    if (!config)
        return tl::unexpected(config.error());
    const std::string path = dir + "/" + kWeightsFile;
    auto file = bigmodel::SafetensorsFile::open(path);
    if (!file)
        return tl::unexpected(file.error());
    struct Pair {
        const bigmodel::TensorInfo *a = nullptr, *b = nullptr;
    };
    std::map<std::string, Pair> pairs;
    const std::string prefix = kAdapterPrefix;
    for (const auto &info : (*file)->tensors()) {
        const bool isA = endsWith(info.name, ".lora_A.weight"), isB = endsWith(info.name, ".lora_B.weight");
        if (info.name.rfind(prefix, 0) != 0 || (!isA && !isB))
            return makeError(ErrorCode::Unsupported,
                             info.name + ": not a LoRA weight (expected base_model.model.<layer>.lora_A.weight or "
                                         ".lora_B.weight; embeddings, biases and DoRA magnitudes are not implemented)",
                             path);
        const std::string module =
            info.name.substr(prefix.size(), info.name.size() - prefix.size() - std::string(".lora_A.weight").size());
        (isA ? pairs[module].a : pairs[module].b) = &info;
    }
    if (pairs.empty())
        return makeError(ErrorCode::InvalidInput, "the adapter holds no LoRA weights", path);
    std::vector<std::string> names;
    at::NoGradGuard noGrad;
    for (const auto &[name, pair] : pairs) {
        auto *layer = dynamic_cast<LoraAdaptable *>(model.findModule(name));
        if (!layer)
            return makeError(ErrorCode::InvalidInput,
                             name + ": the adapter adapts a layer the model has not (is it an adapter of this "
                                    "model's family?)",
                             path);
        if (!pair.a || !pair.b)
            return makeError(ErrorCode::InvalidInput, name + ": lora_A and lora_B must both be present", path);
        const std::vector<int64_t> wantA{config->rank, layer->inFeatures()}, wantB{layer->outFeatures(), config->rank};
        if (pair.a->shape != wantA || pair.b->shape != wantB)
            return makeError(ErrorCode::InvalidInput,
                             name + ": lora_A / lora_B shapes do not match rank " + std::to_string(config->rank) +
                                 " on a layer of " + std::to_string(layer->inFeatures()) + " inputs and " +
                                 std::to_string(layer->outFeatures()) + " outputs",
                             path);
        if (layer->hasLora())
            return makeError(ErrorCode::InvalidInput, name + ": the layer has a LoRA branch already", path);
        layer->attachLora({config->rank, config->scaling(), 0.0});
        for (auto [info, factor] : {std::pair{pair.a, layer->loraA()}, {pair.b, layer->loraB()}}) {
            auto view =
                viewBytes(info->data, info->byteSize(), info->dtype, info->shape, (*file)->mapping(), info->name);
            if (!view)
                return makeError(view.error().code, view.error().message, path);
            factor->baseWeight()->value = view->to(layer->executionDevice(), dtype.value_or(at::kFloat),
                                                   /*non_blocking=*/false, /*copy=*/true);
        }
        names.push_back(name);
    }
    return names;
}

void mergeLora(CausalLM &model)
{
    std::vector<std::pair<std::string, Module *>> modules;
    collectModules(model, "", modules);
    at::NoGradGuard noGrad;
    for (const auto &[name, module] : modules) {
        auto *layer = dynamic_cast<LoraAdaptable *>(module);
        if (!layer || !layer->hasLora())
            continue;
        Parameter *weight = layer->baseWeight();
        auto delta = at::matmul(layer->loraB()->baseWeight()->value.to(at::kFloat),
                                layer->loraA()->baseWeight()->value.to(at::kFloat)) *
                     layer->loraSettings().scaling;
        if (layer->weightIsTransposed())
            delta = delta.t();
        const auto type = weight->value.scalar_type();
        weight->value = (weight->value.to(at::kFloat) + delta.to(weight->value.device())).to(type);
    }
}

} // namespace accel::inference
