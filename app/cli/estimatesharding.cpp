#include "app/cli/estimatesharding.h"

#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modelloader.h"
#include "core/common/accelerateenv.h"
#include "core/plan/devicemesh.h"
#include "core/plan/fp8config.h"
#include "core/plan/shardingplan.h"
#include "core/plan/tensorparallelsplit.h"
#include "launcher/configadapter.h"
#include "launcher/envbuilder.h"
#include "launcher/launchmerge.h"
#include "launcher/rundirectory.h"

#include <QJsonArray>
#include <QJsonObject>

#include <sstream>

namespace accel::cli {

namespace {

// Bytes of one element as estimate-memory's dtypes name them; 0 for those without a training row.
int trainingBytes(const std::string &dtype)
{
    if (dtype == "float32")
        return 4;
    if (dtype == "float16" || dtype == "bfloat16")
        return 2;
    if (dtype == "fp8")
        return 1;
    return 0;
}

} // namespace

bool haveShardingEstimate()
{
    return launcher::haveConfigSupport();
}

namespace {

using Lookup = runtime::Fp8Config::Lookup;

// The trained parameters and the frozen ones one tp rank holds (the runtime's split,
// core/plan/tensorparallelsplit.h), after the refusals the run would give, with the notes saying so.
Result<void> splitOverTensorParallel(const MeshModel &meshModel, int tp, ShardingEstimate &estimate,
                                     uint64_t &parameters, FrozenParameters &frozen)
{
    const bigmodel::LoadedModel *model = meshModel.model;
    bigmodel::ModelConfig unknown; // no config.json: refused as a model without a known plan
    if (auto ok = runtime::checkTensorParallelModel(model && model->config ? *model->config : unknown, tp,
                                                    meshModel.vocabParallel);
        !ok)
        return ok;
    const runtime::TensorParallelShare base =
        runtime::tensorParallelShare(model->structure, tp, meshModel.vocabParallel);
    runtime::TensorParallelShare trained = base;
    if (meshModel.loraRank > 0) { // the adapters train; the base is held frozen, split alike
        trained = runtime::loraTensorParallelShare(model->structure, meshModel.loraLayers, meshModel.loraRank, tp,
                                                   meshModel.vocabParallel);
        frozen.count -= std::min(frozen.count, base.wholeElements - base.elements);
        frozen.storedBytes -= std::min(frozen.storedBytes, base.wholeStoredBytes - base.storedBytes);
    }
    parameters -= std::min(parameters, trained.wholeElements - trained.elements);
    estimate.tensorParallelSplit = trained.splitElements;
    estimate.tensorParallelRankParameters = parameters;
    estimate.notes.push_back(
        "tp " + std::to_string(tp) + " splits q/k/v, gate and up column-wise and o and down row-wise" +
        (meshModel.vocabParallel ? std::string(", embed_tokens and lm_head over the vocabulary")
                                 : std::string("; embeddings, norms and the head are whole on every tp rank")) +
        ": " + std::to_string(trained.splitElements) + " of " + std::to_string(trained.wholeElements) +
        " trained parameters split, " + std::to_string(parameters) + " held per tp rank");
    if (meshModel.sequenceParallel)
        estimate.notes.push_back("sequence parallel splits the tokens between the split layers: activations, not "
                                 "parameters");
    return {};
}

// The per-rank rows for `parameters` under the strategy and precision a rank environment selects
// (`lookup` reads it; a lookup that finds nothing is one process under DDP), on the device mesh it
// lays out. Errors name `context`, unless they name a file of their own (the DeepSpeed config file
// the config points to, the job file for what the job cannot do on the mesh).
Result<ShardingEstimate> estimateUnder(const Lookup &lookup, ShardingEstimate estimate, uint64_t parameters,
                                       const std::vector<std::string> &dtypes, const std::string &mixedPrecision,
                                       FrozenParameters frozen, const MeshModel &meshModel, const std::string &context)
{
    auto named = [&context](Error error, const std::string &file = {}) {
        if (error.context.empty())
            error.context = file.empty() ? context : file;
        return tl::unexpected(std::move(error));
    };
    auto plan = runtime::shardingPlanFromEnvironment(lookup);
    if (!plan)
        return named(plan.error());
    if (auto topology = plan->checkTopology(estimate.worldSize, estimate.processesPerMachine); !topology)
        return named(topology.error());
    // The precision the run trains in and, under fp8, the recipe ACCELERATE_FP8_* selects.
    const char *launched = lookup(accelerateenv::kMixedPrecision);
    estimate.mixedPrecision = !mixedPrecision.empty() ? mixedPrecision : launched ? launched : "no";
    // The mesh the runtime lays out; what the job cannot do on it is refused as the run refuses it.
    const runtime::DeviceMesh mesh =
        runtime::DeviceMesh::forPlan(*plan, estimate.worldSize, estimate.processesPerMachine);
    for (runtime::MeshDim dim : runtime::kMeshDims)
        estimate.mesh[size_t(dim)] = mesh.size(dim);
    estimate.meshDescription = mesh.describe();
    estimate.vocabParallel = meshModel.vocabParallel;
    estimate.sequenceParallel = meshModel.sequenceParallel;
    const int tp = mesh.size(runtime::MeshDim::Tp), cp = mesh.size(runtime::MeshDim::Cp);
    runtime::MeshJob job;
    job.recipe = meshModel.recipe.empty() ? std::string("causal_lm") : meshModel.recipe;
    job.tensorParallel = tp;
    job.contextParallel = cp;
    job.vocabParallel = meshModel.vocabParallel;
    job.sequenceParallel = meshModel.sequenceParallel;
    job.fp8 = estimate.mixedPrecision == "fp8";
    if (auto ok = runtime::checkMeshJob(job); !ok)
        return named(ok.error(), meshModel.jobFile);
    // The same model under DDP on the same processes: whole on every rank.
    const uint64_t wholeParameters = parameters;
    const uint64_t wholeFrozen = frozen.count, wholeFrozenStored = frozen.storedBytes;
    if (tp > 1) {
        if (auto ok = splitOverTensorParallel(meshModel, tp, estimate, parameters, frozen); !ok) {
            Error error = ok.error(); // a model this config cannot train is bad input for its estimate
            error.code = ErrorCode::InvalidInput;
            return named(std::move(error), meshModel.jobFile);
        }
    }
    if (cp > 1)
        estimate.notes.push_back("cp " + std::to_string(cp) +
                                 " replicates parameters, gradients and optimizer state: the ranks that differ only "
                                 "along cp hold the same (their dp_shard group's share)");
    estimate.notes.push_back("activations are not predicted here (parameters, gradients and optimizer state only); "
                             "cp and sequence parallel divide a rank's activations, not these figures");
    if (estimate.mixedPrecision == "fp8") {
        auto fp8 = runtime::Fp8Config::fromEnvironment(lookup);
        if (!fp8)
            return named(fp8.error());
        estimate.fp8Recipe = fp8->describe();
        const std::string &optimizer = estimate.optimizer;
        if (optimizer == "Adam" || optimizer == "adamw" || optimizer == "AdamW" || optimizer == "adam")
            estimate.optimizerStateBytesPerParameter = fp8->adamMomentBytesPerParameter();
    }
    estimate.strategy = plan->describe();
    // The frozen part's bytes, held (and sharded) like parameters: the checkpoint's dtypes under
    // mixed precision, float32 without (as the recipe loads them).
    const bool float32 = estimate.mixedPrecision == "no";
    estimate.frozenParameters = wholeFrozen;
    estimate.frozenBytes = int64_t(float32 ? wholeFrozen * 4 : wholeFrozenStored);
    const int64_t frozenRankBytes = int64_t(float32 ? frozen.count * 4 : frozen.storedBytes);
    const runtime::ShardingPlan ddpPlan;
    const int64_t frozenHeld =
        plan->predictMemory(frozenRankBytes, 1, 0, estimate.worldSize, estimate.processesPerMachine).parameters;
    const int64_t frozenDdp =
        ddpPlan.predictMemory(estimate.frozenBytes, 1, 0, estimate.worldSize, estimate.processesPerMachine).parameters;
    for (const std::string &dtype : dtypes) {
        const int bytes = trainingBytes(dtype);
        if (bytes == 0)
            continue;
        const auto count = static_cast<int64_t>(parameters);
        const auto whole = static_cast<int64_t>(wholeParameters);
        runtime::TrainingMemory memory = plan->predictMemory(count, bytes, estimate.optimizerStates, estimate.worldSize,
                                                             estimate.processesPerMachine);
        runtime::TrainingMemory ddp = ddpPlan.predictMemory(whole, bytes, estimate.optimizerStates, estimate.worldSize,
                                                            estimate.processesPerMachine);
        if (const int state = estimate.optimizerStateBytesPerParameter; state > 0) {
            // The recipe's bytes per parameter, sharded as the plan shards optimizer state.
            memory.optimizerState =
                plan->predictMemory(count, 1, state, estimate.worldSize, estimate.processesPerMachine).optimizerState;
            ddp.optimizerState =
                ddpPlan.predictMemory(whole, 1, state, estimate.worldSize, estimate.processesPerMachine).optimizerState;
        }
        estimate.rows.push_back({dtype, memory.parameters + frozenHeld, memory.gradients, memory.optimizerState,
                                 ddp.parameters + frozenDdp, ddp.gradients, ddp.optimizerState});
    }
    return estimate;
}

// The settings `accel launch --config_file CONFIG [--num_processes N]` would start ranks with: the
// same merge, for a program that is never started.
Result<launcher::LaunchSettings> launchSettingsFor(const std::string &configFile, std::optional<int> numProcesses)
{
    auto loaded = launcher::loadLaunchConfig(configFile);
    if (!loaded)
        return tl::unexpected(loaded.error());
    launcher::LaunchRequest request;
    request.flags["config_file"] = configFile;
    if (numProcesses)
        request.flags["num_processes"] = std::to_string(*numProcesses);
    request.program.kind = launcher::ProgramSpec::Kind::Executable;
    request.program.target = "estimate-memory";
    auto settings = launcher::mergeLaunchSettings(request, loaded->view, launcher::detectHostFacts());
    if (!settings) {
        Error error = settings.error();
        if (error.context.empty())
            error.context = configFile;
        return tl::unexpected(std::move(error));
    }
    return settings;
}

Lookup lookupIn(const launcher::EnvMap &environment)
{
    return [&environment](const char *name) -> const char * {
        const auto it = environment.find(name);
        return it == environment.end() ? nullptr : it->second.c_str();
    };
}

} // namespace

Result<ShardingEstimate> estimateSharding(const std::string &configFile, std::optional<int> numProcesses,
                                          uint64_t parameters, const std::vector<std::string> &dtypes,
                                          const std::string &optimizer, int optimizerStates,
                                          const std::string &mixedPrecision, const FrozenParameters &frozen,
                                          const MeshModel &meshModel)
{
    ShardingEstimate estimate;
    estimate.configFile = configFile;
    estimate.optimizer = optimizer;
    estimate.optimizerStates = optimizerStates;
    if (configFile.empty())
        return estimateUnder([](const char *) -> const char * { return nullptr; }, std::move(estimate), parameters,
                             dtypes, mixedPrecision, frozen, meshModel, configFile);
    auto settings = launchSettingsFor(configFile, numProcesses);
    if (!settings)
        return tl::unexpected(settings.error());
    const launcher::EnvMap environment = launcher::buildRankEnvironment(*settings, {}, {0, 0});
    estimate.worldSize = std::max(1, settings->numProcesses);
    estimate.processesPerMachine = std::max(1, settings->processesPerNode());
    return estimateUnder(lookupIn(environment), std::move(estimate), parameters, dtypes, mixedPrecision, frozen,
                         meshModel, configFile);
}

Result<int> launchedProcesses(const std::string &configFile, std::optional<int> numProcesses)
{
    if (configFile.empty())
        return numProcesses.value_or(1);
    auto settings = launchSettingsFor(configFile, numProcesses);
    if (!settings)
        return tl::unexpected(settings.error());
    return std::max(1, settings->numProcesses);
}

Result<ShardingEstimate> estimateShardingForRun(const std::string &runDirectory, uint64_t parameters,
                                                const std::vector<std::string> &dtypes, const std::string &optimizer,
                                                int optimizerStates, const std::string &mixedPrecision,
                                                const FrozenParameters &frozen, const MeshModel &meshModel)
{
    auto run = launcher::RunDirectory::open(QString::fromStdString(runDirectory));
    if (!run)
        return tl::unexpected(run.error());
    const QString manifestPath = run->filePath(QLatin1String(rundir::file::Manifest));
    const QJsonObject &manifest = run->manifest();
    const QJsonObject settings = manifest.value(QStringLiteral("settings")).toObject();
    const QJsonArray plan = manifest.value(QStringLiteral("plan")).toArray();
    const int processes = settings.value(QStringLiteral("num_processes")).toInt();
    const int local = settings.value(QStringLiteral("local_processes")).toInt();
    if (processes < 1 || local < 1 || plan.isEmpty() ||
        !plan.first().toObject().value(QStringLiteral("env")).isObject())
        return makeError(ErrorCode::InvalidInput,
                         "run.json has no launch plan (settings.num_processes, settings.local_processes and "
                         "plan[0].env, as accel launch writes them); was the run started by accel launch?",
                         manifestPath.toStdString());
    // What the launcher gave rank 0 on top of the environment it was started in.
    launcher::EnvMap environment;
    const QJsonObject env = plan.first().toObject().value(QStringLiteral("env")).toObject();
    for (auto it = env.begin(); it != env.end(); ++it)
        environment[it.key().toStdString()] = it.value().toString().toStdString();
    ShardingEstimate estimate;
    estimate.runDirectory = run->path().toStdString();
    estimate.optimizer = optimizer;
    estimate.optimizerStates = optimizerStates;
    estimate.worldSize = processes;
    estimate.processesPerMachine = local;
    return estimateUnder(lookupIn(environment), std::move(estimate), parameters, dtypes, mixedPrecision, frozen,
                         meshModel, manifestPath.toStdString());
}

nlohmann::ordered_json toJson(const ShardingEstimate &estimate)
{
    nlohmann::ordered_json j;
    j["config_file"] = estimate.configFile;
    j["run_dir"] =
        estimate.runDirectory.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(estimate.runDirectory);
    j["strategy"] = estimate.strategy;
    j["world_size"] = estimate.worldSize;
    j["processes_per_machine"] = estimate.processesPerMachine;
    j["optimizer"] = estimate.optimizer;
    j["optimizer_states"] = estimate.optimizerStates;
    j["mixed_precision"] = estimate.mixedPrecision;
    j["fp8_recipe"] =
        estimate.fp8Recipe.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(estimate.fp8Recipe);
    j["optimizer_state_bytes_per_parameter"] = estimate.optimizerStateBytesPerParameter > 0
                                                   ? nlohmann::ordered_json(estimate.optimizerStateBytesPerParameter)
                                                   : nlohmann::ordered_json(nullptr);
    j["frozen_parameters"] = estimate.frozenParameters;
    j["frozen_bytes"] = estimate.frozenBytes;
    nlohmann::ordered_json mesh;
    for (runtime::MeshDim dim : runtime::kMeshDims)
        mesh[runtime::meshDimName(dim)] = estimate.mesh[size_t(dim)];
    mesh["vocab_parallel"] = estimate.vocabParallel;
    mesh["sequence_parallel"] = estimate.sequenceParallel;
    mesh["description"] = estimate.meshDescription;
    j["mesh"] = mesh;
    j["tensor_parallel"] = estimate.mesh[size_t(runtime::MeshDim::Tp)] > 1
                               ? nlohmann::ordered_json{{"split_parameters", estimate.tensorParallelSplit},
                                                        {"parameters_per_rank", estimate.tensorParallelRankParameters}}
                               : nlohmann::ordered_json(nullptr);
    j["notes"] = estimate.notes;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const ShardingEstimateRow &row : estimate.rows)
        rows.push_back({{"dtype", row.dtype},
                        {"parameters_bytes", row.parameters},
                        {"gradients_bytes", row.gradients},
                        {"optimizer_state_bytes", row.optimizerState},
                        {"total_bytes", row.total()},
                        {"ddp",
                         {{"parameters_bytes", row.ddpParameters},
                          {"gradients_bytes", row.ddpGradients},
                          {"optimizer_state_bytes", row.ddpOptimizerState},
                          {"total_bytes", row.ddpTotal()}}}});
    j["rows"] = rows;
    return j;
}

std::string renderShardingEstimate(const ShardingEstimate &estimate)
{
    std::ostringstream out;
    out << "\nPer rank when training with " << estimate.optimizer << " under "
        << (!estimate.runDirectory.empty() ? "the settings of run " + estimate.runDirectory
            : estimate.configFile.empty()  ? std::string("no config")
                                           : estimate.configFile)
        << " (" << estimate.worldSize << (estimate.worldSize == 1 ? " process" : " processes") << "):\n  "
        << estimate.strategy << "\n  mesh: " << estimate.meshDescription;
    if (estimate.vocabParallel || estimate.sequenceParallel)
        out << " ("
            << (estimate.vocabParallel && estimate.sequenceParallel ? "vocab-parallel embedding and head, "
                                                                      "sequence-parallel norms"
                : estimate.vocabParallel                            ? "vocab-parallel embedding and head"
                                                                    : "sequence-parallel norms")
            << ")";
    out << "\n";
    for (const std::string &note : estimate.notes)
        out << "  note: " << note << "\n";
    if (estimate.optimizerStateBytesPerParameter > 0)
        out << "  optimizer state: " << estimate.optimizerStateBytesPerParameter << " bytes per parameter as "
            << estimate.fp8Recipe << " stores Adam's moments"
            << (estimate.optimizerStateBytesPerParameter == 3 ? " (E4M3 first, FP16 second; no master weights)"
                                                              : " (float32; no master weights)")
            << "\n";
    if (estimate.frozenParameters > 0)
        out << "  frozen: " << estimate.frozenParameters << " parameters ("
            << bigmodel::formatBinarySize(uint64_t(estimate.frozenBytes))
            << " whole) held without gradients or optimizer state, in the parameters column\n";
    char head[160];
    std::snprintf(head, sizeof head, "  dtype       parameters   gradients %11s       total    DDP total\n",
                  (estimate.optimizer + " state").c_str());
    out << head;
    for (const ShardingEstimateRow &row : estimate.rows) {
        char line[160];
        std::snprintf(line, sizeof line, "  %-9s %12s %11s %11s %11s %12s\n", row.dtype.c_str(),
                      bigmodel::formatBinarySize(static_cast<uint64_t>(row.parameters)).c_str(),
                      bigmodel::formatBinarySize(static_cast<uint64_t>(row.gradients)).c_str(),
                      bigmodel::formatBinarySize(static_cast<uint64_t>(row.optimizerState)).c_str(),
                      bigmodel::formatBinarySize(static_cast<uint64_t>(row.total())).c_str(),
                      bigmodel::formatBinarySize(static_cast<uint64_t>(row.ddpTotal())).c_str());
        out << line;
    }
    return out.str();
}

} // namespace accel::cli
