// ShardingEngine::saveState / loadState: the model and optimizer state of a sharded run. Every
// rank writes the pieces of each parameter inside its chunks plus rank 0 an index, so a run
// saved on N ranks resumes on M (each rank joins the pieces and keeps its new chunk).
#include "core/plan/shardedfolder.h"
#include "core/runtime/strategy/shardingengine_p.h"

#include "core/common/fileutil.h"
#include "core/runtime/tensorio.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace accel::runtime {

namespace fs = std::filesystem;

namespace {

const char *const kStateNames[] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer"};

// The optimizer state tensors of one chunk (Adam/AdamW moments, SGD momentum) by name.
std::map<std::string, torch::Tensor> stateTensors(torch::optim::OptimizerParamState *state, int64_t &step)
{
    std::map<std::string, torch::Tensor> tensors;
    const auto add = [&](const char *name, const torch::Tensor &t) {
        if (t.defined() && t.numel() > 0)
            tensors[name] = t;
    };
    if (auto *adamw = dynamic_cast<torch::optim::AdamWParamState *>(state)) {
        step = adamw->step();
        add("exp_avg", adamw->exp_avg());
        add("exp_avg_sq", adamw->exp_avg_sq());
        add("max_exp_avg_sq", adamw->max_exp_avg_sq());
    } else if (auto *adam = dynamic_cast<torch::optim::AdamParamState *>(state)) {
        step = adam->step();
        add("exp_avg", adam->exp_avg());
        add("exp_avg_sq", adam->exp_avg_sq());
        add("max_exp_avg_sq", adam->max_exp_avg_sq());
    } else if (auto *sgd = dynamic_cast<torch::optim::SGDParamState *>(state)) {
        add("momentum_buffer", sgd->momentum_buffer());
    } else if (state) {
        throw std::invalid_argument("saveState: only Adam, AdamW and SGD state can be saved in shards");
    }
    return tensors;
}

template <typename State>
std::unique_ptr<State> adamState(int64_t step, const std::map<std::string, torch::Tensor> &tensors)
{
    auto state = std::make_unique<State>();
    state->step(step);
    state->exp_avg(tensors.at("exp_avg"));
    state->exp_avg_sq(tensors.at("exp_avg_sq"));
    if (auto it = tensors.find("max_exp_avg_sq"); it != tensors.end())
        state->max_exp_avg_sq(it->second);
    return state;
}

std::unique_ptr<torch::optim::OptimizerParamState> makeState(torch::optim::Optimizer &optimizer, int64_t step,
                                                             const std::map<std::string, torch::Tensor> &tensors)
{
    if (dynamic_cast<torch::optim::AdamW *>(&optimizer))
        return adamState<torch::optim::AdamWParamState>(step, tensors);
    if (dynamic_cast<torch::optim::Adam *>(&optimizer))
        return adamState<torch::optim::AdamParamState>(step, tensors);
    if (dynamic_cast<torch::optim::SGD *>(&optimizer)) {
        auto state = std::make_unique<torch::optim::SGDParamState>();
        state->momentum_buffer(tensors.at("momentum_buffer"));
        return state;
    }
    throw std::invalid_argument("loadState: only Adam, AdamW and SGD state can be loaded from shards");
}

std::string rankFile(int rank)
{
    return "rank" + std::to_string(rank) + ".safetensors";
}

// A sharded folder's tensors joined whole (floating point: parameters and optimizer state).
Result<std::map<std::string, torch::Tensor>> readShardedFolder(const std::string &folder)
{
    auto joined = joinShardedFolder(folder);
    if (!joined)
        return tl::unexpected(joined.error());
    std::map<std::string, torch::Tensor> tensors;
    for (auto &t : *joined) {
        torch::ScalarType type;
        switch (t.dtype) {
        case bigmodel::DType::F32:
            type = torch::kFloat;
            break;
        case bigmodel::DType::F64:
            type = torch::kDouble;
            break;
        case bigmodel::DType::F16:
            type = torch::kHalf;
            break;
        case bigmodel::DType::BF16:
            type = torch::kBFloat16;
            break;
        default:
            return makeError(
                ErrorCode::InvalidInput,
                "tensor " + t.name + ": dtype " + bigmodel::dtypeCode(t.dtype) + " is not a training dtype", folder);
        }
        tensors[t.name] = torch::from_blob(t.bytes.data(), t.shape, type).clone();
    }
    return tensors;
}

bool holds(torch::optim::Optimizer &optimizer, const torch::Tensor &tensor)
{
    for (const auto &group : optimizer.param_groups()) {
        for (const auto &p : group.params()) {
            if (p.is_same(tensor))
                return true;
        }
    }
    return false;
}

} // namespace

Result<void> ShardingEngine::writeFolder(const std::string &folder, const std::string &kind,
                                         const std::vector<std::vector<torch::Tensor>> &chunks,
                                         const std::vector<std::string> &prefixes, int64_t step) const
{
    const int ranks = m_shard->size(), rank = m_shard->rank();
    std::map<std::string, torch::Tensor> mine;
    nlohmann::json index{{"format", kShardFormat}, {"kind", kind}, {"ranks", ranks}, {"step", step}};
    index["tensors"] = nlohmann::json::object();
    for (size_t k = 0; k < prefixes.size(); ++k) {
        for (size_t u = 0; u < m_units.size(); ++u) {
            const Unit &unit = *m_units[u];
            if (!chunks[k][u].defined())
                continue;
            for (size_t i = 0; i < unit.parameters.size(); ++i) {
                const std::string name = prefixes[k] + unit.names[i];
                const int64_t begin = unit.offsets[i], end = begin + unit.parameters[i].numel();
                nlohmann::json pieces = nlohmann::json::array();
                for (int r = 0; r < ranks; ++r) {
                    const int64_t lo = std::max(begin, r * unit.chunk), hi = std::min(end, (r + 1) * unit.chunk);
                    if (lo >= hi)
                        continue;
                    pieces.push_back({{"file", rankFile(r)}, {"offset", lo - begin}, {"numel", hi - lo}});
                    if (r == rank)
                        mine[name] = chunks[k][u].detach().narrow(0, lo - r * unit.chunk, hi - lo).clone();
                }
                index["tensors"][name] = {{"shape", unit.parameters[i].sizes().vec()}, {"pieces", pieces}};
            }
        }
    }
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (auto saved = saveTensors((fs::path(folder) / rankFile(rank)).string(), mine); !saved)
        return saved;
    if (rank == 0)
        return fileutil::writeFileAtomic((fs::path(folder) / kShardIndexName).string(), index.dump(1) + "\n");
    return {};
}

torch::Tensor ShardingEngine::flatten(const Unit &unit, const std::map<std::string, torch::Tensor> &tensors,
                                      const std::string &prefix) const
{
    auto flat = torch::zeros({unit.chunk * m_shard->size()}, unit.shard.options().requires_grad(false));
    for (size_t i = 0; i < unit.parameters.size(); ++i) {
        const std::string name = prefix + unit.names[i];
        auto it = tensors.find(name);
        if (it == tensors.end())
            throw std::invalid_argument("tensor " + name + " is missing");
        if (it->second.numel() != unit.parameters[i].numel())
            throw std::invalid_argument("tensor " + name + " holds " + std::to_string(it->second.numel()) +
                                        " values, the model's " + std::to_string(unit.parameters[i].numel()));
        flat.narrow(0, unit.offsets[i], it->second.numel()).copy_(it->second.reshape({-1}));
    }
    return flat;
}

Result<void> ShardingEngine::saveState(const std::string &folder, const StateSlot &slot)
{
    torch::NoGradGuard noGrad;
    // Hybrid: the machines hold equal copies; the first machine writes them.
    const bool writer = !m_replica || m_replica->rank() == 0;
    try {
        if (m_plan.stateDictType == StateDictType::Full) {
            std::vector<bool> wasGathered;
            for (auto &unit : m_units) {
                wasGathered.push_back(unit->gathered);
                ensureGathered(*unit);
            }
            Result<void> saved;
            if (writer && m_shard->rank() == 0)
                saved = saveModelSafetensors(*m_model, (fs::path(folder) / modelFileName(slot.model)).string());
            for (size_t u = 0; u < m_units.size(); ++u) {
                if (!wasGathered[u])
                    release(*m_units[u]);
            }
            if (!saved)
                return saved;
        } else if (writer) {
            std::vector<torch::Tensor> shards;
            for (auto &unit : m_units)
                shards.push_back(unit->shard);
            if (auto saved = writeFolder((fs::path(folder) / shardedModelFolderName(slot.model)).string(), "model",
                                         {shards}, {""}, 0);
                !saved)
                return saved;
        }
        for (size_t k = 0; writer && k < slot.optimizers.size(); ++k) {
            const auto [o, optimizer] = slot.optimizers[k];
            std::vector<std::string> prefixes;
            std::vector<std::vector<torch::Tensor>> chunks;
            int64_t step = 0;
            for (size_t u = 0; u < m_units.size(); ++u) {
                auto &state = optimizer->state();
                auto it = state.find(m_units[u]->shard.unsafeGetTensorImpl());
                if (it == state.end())
                    continue;
                for (auto &[name, tensor] : stateTensors(it->second.get(), step)) {
                    const auto found = std::find(prefixes.begin(), prefixes.end(), name + "/");
                    size_t k = size_t(found - prefixes.begin());
                    if (found == prefixes.end()) {
                        prefixes.push_back(name + "/");
                        chunks.emplace_back(m_units.size());
                    }
                    chunks[k][u] = tensor;
                }
            }
            const std::string sub = "optimizer_" + std::to_string(o);
            if (auto saved = writeFolder((fs::path(folder) / sub).string(), "optimizer", chunks, prefixes, step);
                !saved)
                return saved;
        }
    } catch (const std::exception &e) {
        return makeError(ErrorCode::Io, std::string("saveState: ") + e.what(), folder);
    }
    return {};
}

Result<void> ShardingEngine::loadState(const std::string &folder, const StateSlot &slot)
{
    torch::NoGradGuard noGrad;
    const fs::path base = folder;
    const std::string file = modelFileName(slot.model), sharded = shardedModelFolderName(slot.model);
    Result<std::map<std::string, torch::Tensor>> model;
    if (fs::exists(base / file))
        model = loadTensors((base / file).string());
    else if (fs::exists(base / sharded / kShardIndexName))
        model = readShardedFolder((base / sharded).string());
    else
        return makeError(ErrorCode::NotFound,
                         "loadState: neither " + file + " nor " + sharded + "/" + kShardIndexName +
                             " is in the checkpoint (model " + std::to_string(slot.model) + ")",
                         folder);
    if (!model)
        return tl::unexpected(model.error());
    try {
        const int rank = m_shard->rank();
        for (auto &unit : m_units) {
            auto flat = flatten(*unit, *model, "");
            finishPrefetch(*unit);
            unit->shard.detach().copy_(flat.narrow(0, rank * unit->chunk, unit->chunk));
            if (unit->gathered)
                unit->full.copy_(flat);
        }
        for (const auto &[o, optimizerPointer] : slot.optimizers) {
            const fs::path sub = base / ("optimizer_" + std::to_string(o));
            auto state = readShardedFolder(sub.string());
            if (!state)
                return tl::unexpected(state.error());
            auto savedStep = shardedFolderStep(sub.string());
            if (!savedStep)
                return tl::unexpected(savedStep.error());
            const int64_t step = *savedStep;
            auto &optimizer = *optimizerPointer;
            for (auto &unit : m_units) {
                if (!holds(optimizer, unit->shard) || unit->names.empty())
                    continue;
                std::map<std::string, torch::Tensor> chunk;
                for (const char *name : kStateNames) {
                    if (state->count(std::string(name) + "/" + unit->names.front()))
                        chunk[name] = flatten(*unit, *state, std::string(name) + "/")
                                          .narrow(0, rank * unit->chunk, unit->chunk)
                                          .clone();
                }
                if (!chunk.empty())
                    optimizer.state()[unit->shard.unsafeGetTensorImpl()] = makeState(optimizer, step, chunk);
            }
        }
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("loadState: ") + e.what(), folder);
    }
    return {};
}

} // namespace accel::runtime
