// ShardingEngine::saveState / loadState: the model and optimizer state of a sharded run. Every
// rank writes the pieces of each parameter inside its chunks plus rank 0 an index, so a run
// saved on N ranks resumes on M (each rank joins the pieces and keeps its new chunk). A model split
// by tensor parallelism is saved whole instead (tensorparallellayout.h, whose helpers live here).
#include "core/plan/shardedfolder.h"
#include "core/runtime/strategy/shardingengine_p.h"
#include "core/runtime/strategy/tensorparallellayout.h"

#include "core/common/fileutil.h"
#include "core/runtime/tensorio.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <mutex>

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

// The tensor-parallel split of a tensor named "<name>" or "<state>/<name>", or -1.
int64_t splitDim(const TensorParallelLayout &layout, const std::string &name)
{
    const size_t slash = name.rfind('/');
    const auto it = layout.splitDims.find(slash == std::string::npos ? name : name.substr(slash + 1));
    return it == layout.splitDims.end() ? -1 : it->second;
}

} // namespace

Result<NamedTensors> readShardedFolder(const std::string &folder)
{
    auto joined = joinShardedFolder(folder);
    if (!joined)
        return tl::unexpected(joined.error());
    NamedTensors tensors;
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

namespace {

std::mutex layoutsMutex;
std::map<const torch::nn::Module *, std::shared_ptr<const TensorParallelLayout>> layouts;

} // namespace

void setTensorParallelLayout(const torch::nn::Module &model, std::shared_ptr<const TensorParallelLayout> layout)
{
    std::lock_guard<std::mutex> lock(layoutsMutex);
    if (layout)
        layouts[&model] = std::move(layout);
    else
        layouts.erase(&model);
}

std::shared_ptr<const TensorParallelLayout> tensorParallelLayout(const torch::nn::Module &model)
{
    std::lock_guard<std::mutex> lock(layoutsMutex);
    const auto it = layouts.find(&model);
    return it == layouts.end() ? nullptr : it->second;
}

void gatherWhole(const TensorParallelLayout &layout, NamedTensors &tensors)
{
    torch::NoGradGuard noGrad;
    for (auto &[name, tensor] : tensors) {
        const int64_t dim = splitDim(layout, name);
        if (dim < 0)
            continue;
        torch::Tensor part = tensor.detach().movedim(dim, 0).contiguous();
        std::vector<int64_t> shape = part.sizes().vec();
        shape[0] *= layout.size;
        torch::Tensor whole = torch::empty(shape, part.options());
        layout.allGather(whole, part);
        tensor = whole.movedim(0, dim).contiguous();
    }
}

void keepPart(const TensorParallelLayout &layout, NamedTensors &tensors)
{
    for (auto &[name, tensor] : tensors) {
        const int64_t dim = splitDim(layout, name);
        if (dim < 0)
            continue;
        if (dim >= tensor.dim() || tensor.size(dim) % layout.size != 0)
            throw std::invalid_argument("tensor " + name + " of shape " + c10::str(tensor.sizes()) +
                                        " cannot be split in " + std::to_string(layout.size) + " along dimension " +
                                        std::to_string(dim));
        const int64_t part = tensor.size(dim) / layout.size;
        tensor = tensor.narrow(dim, layout.rank * part, part).contiguous().clone();
    }
}

NamedTensors modelTensors(torch::nn::Module &model)
{
    NamedTensors tensors;
    for (const auto &item : model.named_parameters())
        tensors[item.key()] = item.value().detach();
    for (const auto &item : model.named_buffers())
        tensors[item.key()] = item.value().detach();
    return tensors;
}

Result<void> loadModelTensors(torch::nn::Module &model, const NamedTensors &tensors, const std::string &source)
{
    return copyIntoModel(
        model,
        [&](const std::string &name) -> Result<torch::Tensor> {
            const auto it = tensors.find(name);
            return it == tensors.end() ? torch::Tensor() : it->second;
        },
        source);
}

NamedTensors optimizerTensors(torch::optim::Optimizer &optimizer, const std::map<const void *, std::string> &names,
                              int64_t &step)
{
    NamedTensors tensors;
    for (const auto &group : optimizer.param_groups()) {
        for (const auto &p : group.params()) {
            const auto name = names.find(p.unsafeGetTensorImpl());
            const auto state = optimizer.state().find(p.unsafeGetTensorImpl());
            if (name == names.end() || state == optimizer.state().end())
                continue;
            for (auto &[kind, tensor] : stateTensors(state->second.get(), step))
                tensors[kind + "/" + name->second] = tensor.detach();
        }
    }
    return tensors;
}

void setOptimizerTensors(torch::optim::Optimizer &optimizer, const std::map<const void *, std::string> &names,
                         const NamedTensors &tensors, int64_t step)
{
    for (const auto &group : optimizer.param_groups()) {
        for (const auto &p : group.params()) {
            const auto name = names.find(p.unsafeGetTensorImpl());
            if (name == names.end())
                continue;
            std::map<std::string, torch::Tensor> state;
            for (const char *kind : kStateNames) {
                const auto it = tensors.find(std::string(kind) + "/" + name->second);
                if (it == tensors.end())
                    continue;
                if (it->second.numel() != p.numel())
                    throw std::invalid_argument("optimizer state " + it->first + " holds " +
                                                std::to_string(it->second.numel()) + " values, the parameter " +
                                                std::to_string(p.numel()));
                state[kind] = it->second.reshape(p.sizes()).to(p.options().requires_grad(false)).clone();
            }
            if (!state.empty())
                optimizer.state()[p.unsafeGetTensorImpl()] = makeState(optimizer, step, state);
        }
    }
}

Result<void> writeWholeFolder(const std::string &folder, const std::string &kind, const NamedTensors &tensors,
                              int64_t step)
{
    nlohmann::json index{{"format", kShardFormat}, {"kind", kind}, {"ranks", 1}, {"step", step}};
    index["tensors"] = nlohmann::json::object();
    for (const auto &[name, tensor] : tensors)
        index["tensors"][name] = {
            {"shape", tensor.sizes().vec()},
            {"pieces", nlohmann::json::array({{{"file", rankFile(0)}, {"offset", 0}, {"numel", tensor.numel()}}})}};
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
        return makeError(ErrorCode::Io, "cannot create the folder: " + ec.message(), folder);
    NamedTensors flat;
    for (const auto &[name, tensor] : tensors)
        flat[name] = tensor.reshape({-1});
    if (auto saved = saveTensors((fs::path(folder) / rankFile(0)).string(), flat); !saved)
        return saved;
    return fileutil::writeFileAtomic((fs::path(folder) / kShardIndexName).string(), index.dump(1) + "\n");
}

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

Result<void> ShardingEngine::saveWhole(const std::string &folder, const StateSlot &slot)
{
    const TensorParallelLayout &layout = *slot.tensorParallel;
    // One rank writes: the first of its shard group, replica group and tp group.
    const bool writer = (!m_replica || m_replica->rank() == 0) && m_shard->rank() == 0 && layout.rank == 0;
    std::vector<bool> wasGathered;
    for (auto &unit : m_units) {
        wasGathered.push_back(unit->gathered);
        ensureGathered(*unit);
    }
    NamedTensors model = modelTensors(*m_model);
    gatherWhole(layout, model);
    Result<void> saved;
    if (writer)
        saved = saveTensors((fs::path(folder) / modelFileName(slot.model)).string(), model);
    model.clear();
    for (size_t u = 0; u < m_units.size(); ++u) {
        if (!wasGathered[u])
            release(*m_units[u]);
    }
    for (const auto &[o, optimizer] : slot.optimizers) {
        // Each unit's state chunks all-gathered over the shard group, cut into its parameters.
        NamedTensors state;
        int64_t step = 0;
        for (auto &unit : m_units) {
            auto it = optimizer->state().find(unit->shard.unsafeGetTensorImpl());
            if (it == optimizer->state().end())
                continue;
            for (auto &[name, chunk] : stateTensors(it->second.get(), step)) {
                auto full = torch::empty({unit->chunk * m_shard->size()}, chunk.options());
                m_shard->allGather(full, chunk.detach().contiguous());
                for (size_t i = 0; i < unit->parameters.size(); ++i)
                    state[name + "/" + unit->names[i]] =
                        full.narrow(0, unit->offsets[i], unit->parameters[i].numel()).view(unit->parameters[i].sizes());
            }
        }
        gatherWhole(layout, state);
        if (writer && saved)
            saved = writeWholeFolder((fs::path(folder) / ("optimizer_" + std::to_string(o))).string(), "optimizer",
                                     state, step);
    }
    return saved;
}

Result<void> ShardingEngine::saveState(const std::string &folder, const StateSlot &slot)
{
    torch::NoGradGuard noGrad;
    if (slot.tensorParallel) {
        try {
            return saveWhole(folder, slot);
        } catch (const std::exception &e) {
            return makeError(ErrorCode::Io, std::string("saveState: ") + e.what(), folder);
        }
    }
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
        if (slot.tensorParallel) // whole tensors (tensorparallellayout.h): this rank's part
            keepPart(*slot.tensorParallel, *model);
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
            if (slot.tensorParallel)
                keepPart(*slot.tensorParallel, *state);
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
