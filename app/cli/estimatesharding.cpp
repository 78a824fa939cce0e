#include "app/cli/estimatesharding.h"

#include "core/bigmodel/memorysize.h"
#include "core/common/accelerateenv.h"
#include "core/plan/fp8config.h"
#include "core/plan/shardingplan.h"
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

// The per-rank rows for `parameters` under the strategy and precision a rank environment selects
// (`lookup` reads it; a lookup that finds nothing is one process under DDP). Errors name `context`,
// unless they name a file of their own (the DeepSpeed config file the config points to).
Result<ShardingEstimate> estimateUnder(const Lookup &lookup, ShardingEstimate estimate, uint64_t parameters,
                                       const std::vector<std::string> &dtypes, const std::string &mixedPrecision,
                                       const FrozenParameters &frozen, const std::string &context)
{
    auto named = [&context](Error error) {
        if (error.context.empty())
            error.context = context;
        return tl::unexpected(std::move(error));
    };
    auto plan = runtime::shardingPlanFromEnvironment(lookup);
    if (!plan)
        return named(plan.error());
    if (const int tp = plan->tensorParallelSize; tp > 1) // never a prediction of the whole model per rank
        return named(Error{ErrorCode::InvalidInput,
                           "parallelism_config_tp_size " + std::to_string(tp) +
                               ": the per-rank estimate under tensor parallelism (split attention and feed-forward "
                               "layers, whole embeddings) is not implemented yet; estimate with tp_size: 1",
                           {}});
    // The precision the run trains in and, under fp8, the recipe ACCELERATE_FP8_* selects.
    const char *launched = lookup(accelerateenv::kMixedPrecision);
    estimate.mixedPrecision = !mixedPrecision.empty() ? mixedPrecision : launched ? launched : "no";
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
    estimate.frozenParameters = frozen.count;
    estimate.frozenBytes = int64_t(estimate.mixedPrecision == "no" ? frozen.count * 4 : frozen.storedBytes);
    const runtime::ShardingPlan ddpPlan;
    const int64_t frozenHeld =
        plan->predictMemory(estimate.frozenBytes, 1, 0, estimate.worldSize, estimate.processesPerMachine).parameters;
    const int64_t frozenDdp =
        ddpPlan.predictMemory(estimate.frozenBytes, 1, 0, estimate.worldSize, estimate.processesPerMachine).parameters;
    for (const std::string &dtype : dtypes) {
        const int bytes = trainingBytes(dtype);
        if (bytes == 0)
            continue;
        const auto count = static_cast<int64_t>(parameters);
        runtime::TrainingMemory memory = plan->predictMemory(count, bytes, estimate.optimizerStates, estimate.worldSize,
                                                             estimate.processesPerMachine);
        runtime::TrainingMemory ddp = ddpPlan.predictMemory(count, bytes, estimate.optimizerStates, estimate.worldSize,
                                                            estimate.processesPerMachine);
        if (const int state = estimate.optimizerStateBytesPerParameter; state > 0) {
            // The recipe's bytes per parameter, sharded as the plan shards optimizer state.
            memory.optimizerState =
                plan->predictMemory(count, 1, state, estimate.worldSize, estimate.processesPerMachine).optimizerState;
            ddp.optimizerState =
                ddpPlan.predictMemory(count, 1, state, estimate.worldSize, estimate.processesPerMachine).optimizerState;
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
                                          const std::string &mixedPrecision, const FrozenParameters &frozen)
{
    ShardingEstimate estimate;
    estimate.configFile = configFile;
    estimate.optimizer = optimizer;
    estimate.optimizerStates = optimizerStates;
    if (configFile.empty())
        return estimateUnder([](const char *) -> const char * { return nullptr; }, std::move(estimate), parameters,
                             dtypes, mixedPrecision, frozen, configFile);
    auto settings = launchSettingsFor(configFile, numProcesses);
    if (!settings)
        return tl::unexpected(settings.error());
    const launcher::EnvMap environment = launcher::buildRankEnvironment(*settings, {}, {0, 0});
    estimate.worldSize = std::max(1, settings->numProcesses);
    estimate.processesPerMachine = std::max(1, settings->processesPerNode());
    return estimateUnder(lookupIn(environment), std::move(estimate), parameters, dtypes, mixedPrecision, frozen,
                         configFile);
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
                                                const FrozenParameters &frozen)
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
                         manifestPath.toStdString());
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
        << estimate.strategy << "\n";
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
