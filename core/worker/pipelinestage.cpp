#include "core/worker/pipelinestage.h"

#include "core/inference/devicemapspec.h"
#include "core/inference/gpt2model.h"
#include "core/inference/llamamodel.h"

#include <cmath>
#include <set>

namespace accel::worker {

using inference::CausalLM;
using inference::DeviceMap;
using inference::kPipelineDeviceMap;
using inference::kRankDevicePrefix;
using inference::ModelFamily;

namespace {

bool covers(const std::string &prefix, const std::string &name)
{
    return prefix.empty() || name == prefix ||
           (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.');
}

// The entry of `map` with the longest key covering `name`, or null.
const std::pair<std::string, std::string> *longestMatch(const DeviceMap &map, const std::string &name)
{
    const std::pair<std::string, std::string> *best = nullptr;
    for (const auto &entry : map)
        if (covers(entry.first, name) && (!best || entry.first.size() > best->first.size()))
            best = &entry;
    return best;
}

std::string keyText(const std::string &key)
{
    return key.empty() ? std::string("\"\"") : key;
}

// The names of the model's modules around the blocks (the families' transformers names).
struct FamilyNames {
    std::string embedding, positions, norm;
};

FamilyNames familyNames(const CausalLM &model)
{
    if (model.config().family == ModelFamily::Gpt2)
        return {"transformer.wte", "transformer.wpe", "transformer.ln_f"};
    return {"model.embed_tokens", "", "model.norm"};
}

// Which stages hold a parameter: a block's stage; before the blocks the first stage (and the last
// for a tied embedding matrix); after them the last stage.
std::set<int> stagesOf(const std::string &name, const PipelinePlan &plan, const CausalLM &model, bool beforeBlocks)
{
    const std::string prefix = model.blockPrefix() + ".";
    if (name.compare(0, prefix.size(), prefix) == 0) {
        const int64_t layer = std::stoll(name.substr(prefix.size()));
        for (int s = 0; s < plan.stages(); ++s)
            if (layer >= plan.begin(s) && layer < plan.end(s))
                return {s};
    }
    const int last = plan.stages() - 1;
    if (!beforeBlocks)
        return {last};
    if (model.config().tieWordEmbeddings && covers(familyNames(model).embedding, name))
        return {0, last};
    return {0};
}

Result<int> rankOf(const std::string &key, const std::string &device, int stages)
{
    const std::string prefix = kRankDevicePrefix;
    if (device.compare(0, prefix.size(), prefix) == 0) {
        try {
            size_t used = 0;
            const int rank = std::stoi(device.substr(prefix.size()), &used);
            if (used == device.size() - prefix.size() && rank >= 0 && rank < stages)
                return rank;
        } catch (const std::exception &) {
        }
    }
    return makeError(ErrorCode::InvalidInput, "device map: " + keyText(key) + ": \"" + device +
                                                  "\": a pipeline map names a process of the launch, rank:0 to rank:" +
                                                  std::to_string(stages - 1) +
                                                  " (every entry; cpu, disk and GPU indices are not mixed in)");
}

// The layers of each stage from a map naming processes; the blocks must go to the ranks in order.
Result<PipelinePlan> planFromMap(const DeviceMap &map, CausalLM &model, int stages)
{
    const int64_t layers = model.config().numLayers;
    const std::string prefix = model.blockPrefix();
    std::set<std::string> parameters;
    for (const auto &p : model.namedParameters())
        parameters.insert(p.name);
    for (const auto &[key, device] : map)
        if (!key.empty() && !model.findModule(key) && !parameters.count(key))
            return makeError(ErrorCode::InvalidInput, "device map: '" + key +
                                                          "' names no module or parameter of the model (a pipeline "
                                                          "map names the layers, e.g. " +
                                                          prefix + ".0, and the modules around them)");
    std::vector<int> rankOfLayer;
    for (int64_t i = 0; i < layers; ++i) {
        const std::string block = prefix + "." + std::to_string(i);
        for (const auto &[key, device] : map)
            if (key.size() > block.size() && covers(block, key))
                return makeError(ErrorCode::InvalidInput, "device map: " + key +
                                                              ": a pipeline runs whole layers on a process; place " +
                                                              block + " as a whole");
        const auto *entry = longestMatch(map, block);
        if (!entry)
            return makeError(ErrorCode::InvalidInput,
                             "device map: no entry places " + block + " on a process (rank:N)");
        auto rank = rankOf(entry->first, entry->second, stages);
        if (!rank)
            return tl::unexpected(rank.error());
        if (!rankOfLayer.empty() && *rank != rankOfLayer.back() && *rank != rankOfLayer.back() + 1)
            return makeError(ErrorCode::InvalidInput,
                             "device map: " + block + ": rank:" + std::to_string(*rank) +
                                 " after rank:" + std::to_string(rankOfLayer.back()) +
                                 "; the processes take the layers in order, each a run of consecutive layers");
        if (rankOfLayer.empty() && *rank != 0)
            return makeError(ErrorCode::InvalidInput, "device map: " + block + ": rank:" + std::to_string(*rank) +
                                                          "; the first layer runs on rank:0");
        rankOfLayer.push_back(*rank);
    }
    if (rankOfLayer.back() != stages - 1)
        return makeError(ErrorCode::InvalidInput,
                         "device map: the layers end on rank:" + std::to_string(rankOfLayer.back()) +
                             " but the launch has " + std::to_string(stages) +
                             " processes; give every process a run of layers");
    PipelinePlan plan;
    plan.numLayers = layers;
    for (int64_t i = 0; i < layers; ++i)
        if (i == 0 || rankOfLayer[static_cast<size_t>(i)] != rankOfLayer[static_cast<size_t>(i - 1)])
            plan.firstLayer.push_back(i);
    // Every other entry: before the blocks on rank:0, after them on the last rank.
    bool beforeBlocks = true;
    for (const auto &p : model.namedParameters()) {
        if (covers(prefix, p.name)) {
            beforeBlocks = false;
            continue;
        }
        const auto *entry = longestMatch(map, p.name);
        if (!entry || covers(entry->first, prefix))
            continue;
        auto rank = rankOf(entry->first, entry->second, stages);
        if (!rank)
            return tl::unexpected(rank.error());
        const int wanted = beforeBlocks ? 0 : stages - 1;
        if (*rank != wanted)
            return makeError(ErrorCode::InvalidInput,
                             "device map: " + keyText(entry->first) + ": rank:" + std::to_string(*rank) + "; " +
                                 (beforeBlocks ? "the embeddings run on the first process (rank:0)"
                                               : "the final norm and head run on the last process (rank:" +
                                                     std::to_string(stages - 1) + ")"));
    }
    return plan;
}

} // namespace

Result<PipelinePlan> planPipeline(const std::string &spec, CausalLM &model, int stages)
{
    const int64_t layers = model.config().numLayers;
    if (layers < stages)
        return makeError(ErrorCode::InvalidInput,
                         "--device_map " + std::string(spec == kPipelineDeviceMap ? spec : "(pipeline map)") + ": " +
                             std::to_string(stages) + " processes but the model has " + std::to_string(layers) +
                             " layers; every process runs at least one layer (use at most " + std::to_string(layers) +
                             " processes)");
    if (spec != kPipelineDeviceMap) {
        auto resolved = inference::resolveDeviceMap({spec, {}, {}, {}}, nullptr);
        if (!resolved)
            return tl::unexpected(resolved.error());
        return planFromMap(resolved->map, model, stages);
    }
    PipelinePlan plan; // split_between_processes' rule over the layers
    plan.numLayers = layers;
    const int64_t each = layers / stages, extras = layers % stages;
    for (int64_t s = 0, first = 0; s < stages; ++s) {
        plan.firstLayer.push_back(first);
        first += each + (s < extras ? 1 : 0);
    }
    return plan;
}

DeviceMap stageDeviceMap(const PipelinePlan &plan, CausalLM &model, int stage)
{
    DeviceMap map;
    bool beforeBlocks = true;
    for (const auto &p : model.namedParameters()) {
        if (covers(model.blockPrefix(), p.name))
            beforeBlocks = false;
        map.emplace_back(p.name, stagesOf(p.name, plan, model, beforeBlocks).count(stage) ? "cpu" : "disk");
    }
    return map;
}

DeviceMap pipelineLayout(const PipelinePlan &plan, CausalLM &model)
{
    const FamilyNames names = familyNames(model);
    const std::string first = kRankDevicePrefix + std::string("0");
    const std::string last = kRankDevicePrefix + std::to_string(plan.stages() - 1);
    DeviceMap map{{names.embedding, first}};
    if (!names.positions.empty())
        map.emplace_back(names.positions, first);
    for (int s = 0; s < plan.stages(); ++s)
        for (int64_t i = plan.begin(s); i < plan.end(s); ++i)
            map.emplace_back(model.blockPrefix() + "." + std::to_string(i), kRankDevicePrefix + std::to_string(s));
    map.emplace_back(names.norm, last);
    if (model.findModule("lm_head"))
        map.emplace_back("lm_head", last);
    return map;
}

PipelineStage::PipelineStage(CausalLM &model, PipelinePlan plan, int stage)
    : m_model(&model), m_plan(std::move(plan)), m_stage(stage)
{}

Result<PipelineStage> PipelineStage::create(CausalLM &model, const PipelinePlan &plan, int stage)
{
    PipelineStage s(model, plan, stage);
    const FamilyNames names = familyNames(model);
    s.m_embedding = model.findModule(names.embedding);
    s.m_positions = names.positions.empty() ? nullptr : model.findModule(names.positions);
    s.m_norm = model.findModule(names.norm);
    s.m_lmHead = model.findModule("lm_head");
    for (int64_t i = 0; i < model.config().numLayers; ++i)
        s.m_blocks.push_back(model.findModule(model.blockPrefix() + "." + std::to_string(i)));
    if (!s.m_embedding || !s.m_norm || (!names.positions.empty() && !s.m_positions))
        return makeError(ErrorCode::Unsupported,
                         "pipeline: model_type '" + model.config().modelType + "' has no pipeline stages");
    if (model.config().family == ModelFamily::Llama)
        s.m_rotary.emplace(model.config().rope);
    return s;
}

at::Tensor PipelineStage::embed(const at::Tensor &ids, int64_t past)
{
    // As Gpt2Model / LlamaModel::forward begin (inference: no dropout).
    auto &embedding = static_cast<inference::Embedding &>(*m_embedding);
    at::Tensor h = embedding.forward(ids);
    const auto &c = m_model->config();
    if (m_positions) {
        auto positions = at::arange(past, past + ids.size(1), at::TensorOptions().dtype(at::kLong));
        h = h + static_cast<inference::Embedding &>(*m_positions).forward(positions).to(h.device()).unsqueeze(0);
    }
    if (c.scaleEmbeddings)
        h = h * at::scalar_tensor(std::sqrt(static_cast<double>(c.hiddenSize)), at::kFloat)
                    .to(h.scalar_type())
                    .to(h.device());
    return h;
}

at::Tensor PipelineStage::layers(const at::Tensor &hidden, inference::KVCache &cache)
{
    const int64_t tokens = hidden.size(1);
    at::Tensor h = hidden;
    std::pair<at::Tensor, at::Tensor> rotation;
    if (m_rotary)
        rotation = m_rotary->cosSin(cache.length(), tokens);
    for (int64_t i = m_plan.begin(m_stage); i < m_plan.end(m_stage); ++i) {
        inference::Module *block = m_blocks[static_cast<size_t>(i)];
        const auto layer = static_cast<size_t>(i);
        if (m_rotary)
            h = static_cast<inference::LlamaBlock *>(block)->forward(h, rotation.first, rotation.second, &cache, layer);
        else
            h = static_cast<inference::Gpt2Block *>(block)->forward(h, &cache, layer);
    }
    cache.advance(tokens);
    return h;
}

at::Tensor PipelineStage::head(const at::Tensor &hidden, bool lastOnly)
{
    at::Tensor h = lastOnly ? hidden.narrow(1, hidden.size(1) - 1, 1) : hidden;
    const auto &c = m_model->config();
    if (m_rotary)
        h = static_cast<inference::RMSNorm &>(*m_norm).forward(h);
    else
        h = static_cast<inference::LayerNorm &>(*m_norm).forward(h);
    at::Tensor logits = m_lmHead ? static_cast<inference::Linear &>(*m_lmHead).forward(h)
                                 : static_cast<inference::Embedding &>(*m_embedding).project(h);
    if (c.finalLogitSoftcap > 0)
        logits = at::tanh(logits / c.finalLogitSoftcap) * c.finalLogitSoftcap;
    return logits.to(at::kCPU, at::kFloat);
}

void PipelineStage::dropOtherStages()
{
    const DeviceMap mine = stageDeviceMap(m_plan, *m_model, m_stage);
    for (const auto &[name, device] : mine) {
        if (device != "disk")
            continue;
        const std::string owner = name.substr(0, name.rfind('.'));
        if (inference::Module *module = m_model->findModule(owner))
            module->clearHooks();
    }
}

} // namespace accel::worker
