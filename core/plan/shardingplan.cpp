#include "core/plan/shardingplan.h"

#include "core/common/accelerateenv.h"
#include "core/common/fileutil.h"
#include "core/common/fsdpvalues.h"
#include "core/common/jsondocument.h"
#include "core/common/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

namespace accel::runtime {

namespace {

using Lookup = EnvLookup;

// A DeepSpeed config holds a few KB of settings; a megabyte is far beyond any.
constexpr uint64_t kMaxDeepSpeedConfigBytes = uint64_t(1) << 20;

using text::lower;
using text::trim;
using text::upper;

std::string get(const Lookup &lookup, const char *name)
{
    const char *value = lookup(name);
    return value ? trim(value) : std::string();
}

Error invalid(const std::string &variable, const std::string &value, const std::string &expected)
{
    return Error{ErrorCode::InvalidInput, variable + "=" + value + ": expected " + expected, {}};
}

Error unsupported(const std::string &setting, const std::string &value, const std::string &why)
{
    return Error{ErrorCode::Unsupported, setting + "=" + value + ": " + why, {}};
}

// Python-style truth of an exported flag; empty = fallback.
Result<bool> flag(const Lookup &lookup, const char *name, bool fallback)
{
    const std::string value = lower(get(lookup, name));
    if (value.empty())
        return fallback;
    if (value == "true" || value == "1" || value == "yes")
        return true;
    if (value == "false" || value == "0" || value == "no")
        return false;
    return tl::unexpected(invalid(name, value, "true or false"));
}

// FSDP1 strategy by name or by Accelerate's 1-based index.
Result<std::string> fsdpStrategy(const std::string &variable, const std::string &value)
{
    const std::vector<std::string> &names = fsdp::shardingStrategies();
    std::string name = upper(value);
    if (name.size() == 1 && name[0] >= '1' && size_t(name[0] - '0') <= names.size())
        name = names[size_t(name[0] - '1')];
    if (fsdp::isOneOf(names, name))
        return name;
    return tl::unexpected(invalid(variable, value, fsdp::oneOf(names)));
}

void applyFsdpStrategy(const std::string &name, ShardingPlan &plan)
{
    const fsdp::ShardingStrategy *strategy = fsdp::findShardingStrategy(name);
    plan.strategy = name;
    plan.hybrid = strategy->hybrid;
    plan.stage = strategy->stage;
    plan.reshardAfterForward = strategy->reshardAfterForward;
}

Result<void> readFsdp(const Lookup &lookup, ShardingPlan &plan)
{
    plan.source = ShardingSource::Fsdp;
    const std::string version = get(lookup, "FSDP_VERSION");
    if (version.empty() || version == "1")
        plan.fsdpVersion = 1;
    else if (version == "2")
        plan.fsdpVersion = 2;
    else
        return tl::unexpected(invalid("FSDP_VERSION", version, "1 or 2"));

    const std::string reshard = get(lookup, "FSDP_RESHARD_AFTER_FORWARD");
    if (plan.fsdpVersion == 1) {
        // The always-exported sharding strategy wins; reshard_after_forward is the fallback.
        const std::string strategy = get(lookup, "FSDP_SHARDING_STRATEGY");
        std::string name = fsdp::kFullShard;
        if (!strategy.empty()) {
            auto parsed = fsdpStrategy("FSDP_SHARDING_STRATEGY", strategy);
            if (!parsed)
                return tl::unexpected(parsed.error());
            name = *parsed;
        } else if (lower(reshard) == "true" || lower(reshard) == "false") {
            name = lower(reshard) == "true" ? fsdp::kFullShard : fsdp::kShardGradOp;
        } else if (!reshard.empty()) {
            auto parsed = fsdpStrategy("FSDP_RESHARD_AFTER_FORWARD", reshard);
            if (!parsed)
                return tl::unexpected(parsed.error());
            name = *parsed;
        }
        applyFsdpStrategy(name, plan);
    } else {
        const std::string value = lower(reshard);
        if (value.empty() || value == "true" || value == "false") {
            applyFsdpStrategy(value == "false" ? fsdp::kShardGradOp : fsdp::kFullShard, plan);
            plan.strategy =
                std::string("fully_shard(reshard_after_forward=") + (value == "false" ? "False" : "True") + ")";
        } else if (!value.empty() && std::all_of(value.begin(), value.end(), ::isdigit)) {
            return tl::unexpected(unsupported("FSDP_RESHARD_AFTER_FORWARD", reshard,
                                              "resharding to a smaller world size after forward is not "
                                              "implemented; use true or false"));
        } else {
            return tl::unexpected(invalid("FSDP_RESHARD_AFTER_FORWARD", reshard, "true or false (FSDP2)"));
        }
    }

    auto offload = flag(lookup, "FSDP_OFFLOAD_PARAMS", false);
    if (!offload)
        return tl::unexpected(offload.error());
    plan.offloadParameters = plan.offloadOptimizerState = *offload;

    const std::string policy = upper(get(lookup, "FSDP_AUTO_WRAP_POLICY"));
    if (!policy.empty() && !fsdp::isOneOf(fsdp::autoWrapPolicies(), policy))
        return tl::unexpected(invalid("FSDP_AUTO_WRAP_POLICY", policy, fsdp::oneOf(fsdp::autoWrapPolicies())));
    if (policy.empty() || policy == fsdp::kNoWrap) {
        plan.wrapPolicy = WrapPolicy::None;
    } else if (policy == fsdp::kTransformerBasedWrap) {
        plan.wrapPolicy = WrapPolicy::TransformerBlock;
        const std::string classes = get(lookup, "FSDP_TRANSFORMER_CLS_TO_WRAP");
        size_t start = 0;
        while (start <= classes.size() && !classes.empty()) {
            const size_t comma = std::min(classes.find(',', start), classes.size());
            if (auto name = trim(classes.substr(start, comma - start)); !name.empty())
                plan.wrapClasses.push_back(name);
            start = comma + 1;
        }
    } else if (policy == fsdp::kSizeBasedWrap) {
        plan.wrapPolicy = WrapPolicy::Size;
        const std::string value = get(lookup, "FSDP_MIN_NUM_PARAMS");
        char *end = nullptr;
        const double number = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || number < 0 || std::floor(number) != number)
            return tl::unexpected(invalid("FSDP_MIN_NUM_PARAMS", value, "a whole number of parameters"));
        plan.minNumParams = int64_t(number);
    } else {
        // A policy of the table the engine has no units for yet.
        return tl::unexpected(unsupported("FSDP_AUTO_WRAP_POLICY", policy, "not implemented by the sharding engine"));
    }

    const std::string backward = upper(get(lookup, "FSDP_BACKWARD_PREFETCH"));
    if (!backward.empty() && !fsdp::isOneOf(fsdp::backwardPrefetchModes(), backward))
        return tl::unexpected(invalid("FSDP_BACKWARD_PREFETCH", backward, fsdp::oneOf(fsdp::backwardPrefetchModes())));
    if (plan.fsdpVersion == 1)
        plan.backwardPrefetch = backward;
    else if (!backward.empty())
        plan.notes.push_back("FSDP_BACKWARD_PREFETCH=" + backward + " is dropped for FSDP2, as Accelerate does");
    auto forward = flag(lookup, "FSDP_FORWARD_PREFETCH", false);
    if (!forward)
        return tl::unexpected(forward.error());
    if (*forward && plan.fsdpVersion == 2)
        return tl::unexpected(unsupported("FSDP_FORWARD_PREFETCH", "true", "FSDP2 has no forward prefetch; unset it"));
    plan.forwardPrefetch = *forward;

    const std::string stateDict = upper(get(lookup, "FSDP_STATE_DICT_TYPE"));
    if (!stateDict.empty() && !fsdp::isOneOf(fsdp::stateDictTypes(), stateDict))
        return tl::unexpected(invalid("FSDP_STATE_DICT_TYPE", stateDict, fsdp::oneOf(fsdp::stateDictTypes())));
    if (stateDict.empty())
        plan.stateDictType = plan.fsdpVersion == 1 ? StateDictType::Full : StateDictType::Sharded;
    else if (stateDict == fsdp::kFullStateDict)
        plan.stateDictType = StateDictType::Full;
    else if (stateDict == fsdp::kShardedStateDict)
        plan.stateDictType = StateDictType::Sharded;
    else
        return tl::unexpected(unsupported("FSDP_STATE_DICT_TYPE", stateDict,
                                          "not implemented; use " + std::string(fsdp::kFullStateDict) + " or " +
                                              fsdp::kShardedStateDict));

    auto checkpointing = flag(lookup, "FSDP_ACTIVATION_CHECKPOINTING", false);
    if (!checkpointing)
        return tl::unexpected(checkpointing.error());
    if (*checkpointing)
        return tl::unexpected(unsupported("FSDP_ACTIVATION_CHECKPOINTING", "true",
                                          "activation checkpointing is not implemented by the runtime; set "
                                          "fsdp_activation_checkpointing: false"));
    if (const std::string ignored = get(lookup, "FSDP_IGNORED_MODULES"); !ignored.empty())
        return tl::unexpected(unsupported("FSDP_IGNORED_MODULES", ignored, "ignored modules are not implemented"));

    auto sync = flag(lookup, "FSDP_SYNC_MODULE_STATES", true);
    auto ramEfficient = flag(lookup, "FSDP_CPU_RAM_EFFICIENT_LOADING", false);
    if (!sync)
        return tl::unexpected(sync.error());
    if (!ramEfficient)
        return tl::unexpected(ramEfficient.error());
    plan.syncModuleStates = *sync || *ramEfficient;
    plan.cpuRamEfficientLoading = *ramEfficient;
    if (!plan.syncModuleStates)
        plan.notes.push_back("FSDP_SYNC_MODULE_STATES=false: parameters are still broadcast from rank 0 at prepare");
    return {};
}

Result<std::string> offloadDevice(const std::string &variable, const std::string &value)
{
    const std::string device = lower(value);
    if (device.empty() || device == "none" || device == "cpu")
        return device.empty() ? std::string("none") : device;
    if (device == "nvme")
        return tl::unexpected(unsupported(variable, value, "offload to NVMe is not implemented; use cpu or none"));
    return tl::unexpected(invalid(variable, value, "one of none, cpu, nvme"));
}

Result<void> applyOffload(const std::string &optimizerVariable, const std::string &optimizerDevice,
                          const std::string &parameterVariable, const std::string &parameterDevice, ShardingPlan &plan)
{
    auto optimizer = offloadDevice(optimizerVariable, optimizerDevice);
    if (!optimizer)
        return tl::unexpected(optimizer.error());
    auto parameters = offloadDevice(parameterVariable, parameterDevice);
    if (!parameters)
        return tl::unexpected(parameters.error());
    plan.offloadOptimizerState = *optimizer == "cpu" && plan.stage >= 1;
    if (*optimizer == "cpu" && plan.stage == 0)
        plan.notes.push_back(optimizerVariable + "=cpu does nothing at ZeRO stage 0");
    plan.offloadParameters = *parameters == "cpu" && plan.stage == 3;
    if (*parameters == "cpu" && plan.stage < 3)
        plan.notes.push_back(parameterVariable +
                             "=cpu does nothing below ZeRO stage 3 (DeepSpeed honours it only there)");
    return {};
}

void applyStage(int stage, ShardingPlan &plan)
{
    plan.stage = stage;
    plan.strategy = "ZeRO-" + std::to_string(stage);
    plan.reshardAfterForward = stage == 3;
    plan.zero3Init = stage == 3;
    // DeepSpeed prefetches the parameters used next in forward and backward (its default
    // stage3_prefetch_bucket_size is 5e7 elements; 0 turns it off).
    plan.forwardPrefetch = stage == 3;
    plan.backwardPrefetch = stage == 3 ? fsdp::kBackwardPre : "";
}

Result<void> readDeepSpeed(const Lookup &lookup, ShardingPlan &plan)
{
    plan.source = ShardingSource::DeepSpeed;
    plan.stateDictType = StateDictType::Full;
    if (const std::string moe = get(lookup, accelerateenv::kDeepSpeedMoeLayerClassNames); !moe.empty())
        return makeError(ErrorCode::Unsupported, std::string(accelerateenv::kDeepSpeedMoeLayerClassNames) + "=" + moe +
                                                     ": mixture-of-experts layers are not "
                                                     "implemented by the runtime");
    if (const std::string file = get(lookup, accelerateenv::kDeepSpeedConfigFile); !file.empty()) {
        // Accelerate's guard: settings from the accelerate config are ignored next to a JSON file.
        const std::string fields = lower(get(lookup, accelerateenv::kDeepSpeedConfigFields));
        for (const char *field : {"gradient_accumulation_steps", "gradient_clipping", "zero_stage",
                                  "offload_optimizer_device", "offload_param_device", "offload_optimizer_nvme_path",
                                  "offload_param_nvme_path", "zero3_save_16bit_model", "mixed_precision"}) {
            if (("," + fields + ",").find(std::string(",") + field + ",") != std::string::npos)
                return makeError(ErrorCode::InvalidInput, std::string("deepspeed_config: ") + field +
                                                              " is set next to deepspeed_config_file " + file +
                                                              "; put it in the DeepSpeed file instead");
        }
        plan.deepSpeedConfigFile = file;
        if (auto applied = applyDeepSpeedJson(file, plan); !applied)
            return applied;
        // Accelerate reads zero3_init_flag from its variable next to a file too (default: stage 3).
        auto init = flag(lookup, accelerateenv::kDeepSpeedZero3Init, plan.stage == 3);
        if (!init)
            return tl::unexpected(init.error());
        plan.zero3Init = *init && plan.stage == 3;
        return {};
    }
    const std::string stage = get(lookup, accelerateenv::kDeepSpeedZeroStage);
    if (!stage.empty() && (stage.size() != 1 || stage[0] < '0' || stage[0] > '3'))
        return makeError(ErrorCode::InvalidInput,
                         std::string(accelerateenv::kDeepSpeedZeroStage) + "=" + stage + ": expected 0, 1, 2 or 3");
    applyStage(stage.empty() ? 2 : stage[0] - '0', plan);
    if (auto offload = applyOffload(accelerateenv::kDeepSpeedOffloadOptimizerDevice,
                                    get(lookup, accelerateenv::kDeepSpeedOffloadOptimizerDevice),
                                    accelerateenv::kDeepSpeedOffloadParamDevice,
                                    get(lookup, accelerateenv::kDeepSpeedOffloadParamDevice), plan);
        !offload)
        return offload;
    if (const std::string clip = lower(get(lookup, accelerateenv::kGradientClipping));
        !clip.empty() && clip != "auto" && clip != "none") {
        char *end = nullptr;
        const double value = std::strtod(clip.c_str(), &end);
        if (*end != '\0' || !(value >= 0))
            return makeError(ErrorCode::InvalidInput, std::string(accelerateenv::kGradientClipping) + "=" + clip +
                                                          ": expected a non-negative number");
        plan.gradientClipping = value;
    }
    if (const std::string steps = get(lookup, accelerateenv::kGradientAccumulationSteps); !steps.empty())
        plan.gradientAccumulationSteps = std::atoi(steps.c_str()); // validated by DistributedEnv
    auto init = flag(lookup, accelerateenv::kDeepSpeedZero3Init, plan.stage == 3);
    auto save16 = flag(lookup, accelerateenv::kDeepSpeedZero3Save16BitModel, false);
    if (!init)
        return tl::unexpected(init.error());
    if (!save16)
        return tl::unexpected(save16.error());
    plan.zero3Init = *init && plan.stage == 3;
    plan.zero3Save16BitModel = *save16;
    return {};
}

} // namespace

DivideFactors fsdpDivideFactors(int worldSize)
{
    DivideFactors factors;
    int pre = 1;
    while (worldSize % pre == 0 && worldSize / pre > pre)
        pre *= 2;
    factors.pre = pre;
    factors.post = double(worldSize) / double(pre);
    return factors;
}

DivideFactors ShardingPlan::divideFactors(int worldSize) const
{
    if (worldSize <= 1)
        return {};
    if (source == ShardingSource::Fsdp && fsdpVersion == 1)
        return fsdpDivideFactors(worldSize);
    if (source == ShardingSource::Fsdp)
        return {1.0, double(worldSize)}; // FSDP2 averages (gloo has no AVG: SUM, then divide)
    return {double(worldSize), 1.0};     // DeepSpeed and DDP divide before the sum
}

Result<void> ShardingPlan::checkTopology(int worldSize, int localWorldSize) const
{
    const int tp = std::max(1, tensorParallelSize), cp = std::max(1, contextParallelSize);
    if (tp > 1 || cp > 1) {
        std::string sizes = tp > 1 ? "parallelism_config_tp_size " + std::to_string(tp) : std::string();
        if (cp > 1)
            sizes += (sizes.empty() ? "" : " x ") + std::string("parallelism_config_cp_size ") + std::to_string(cp);
        if (worldSize % (tp * cp) != 0)
            return makeError(ErrorCode::InvalidInput, sizes + " does not divide the job's " +
                                                          std::to_string(worldSize) + " process(es) (WORLD_SIZE)");
        if (hybrid)
            return makeError(ErrorCode::Unsupported, sizes + " with " + strategy +
                                                         ": tensor / context parallelism inside hybrid sharding is "
                                                         "not implemented; use FSDP2 (dp_shard) or DDP (dp_replicate)");
    }
    if (const int replicate = hybridReplicas(); replicate > 1) {
        const std::string name = "parallelism_config_dp_replicate_size " + std::to_string(replicate);
        const int data = worldSize % (tp * cp) == 0 ? worldSize / (tp * cp) : worldSize;
        if (data % replicate != 0)
            return makeError(ErrorCode::InvalidInput, name + " does not divide the job's " + std::to_string(data) +
                                                          " data-parallel process(es)");
    }
    if (!hybrid || localWorldSize <= 0 || worldSize % localWorldSize == 0)
        return {};
    return makeError(ErrorCode::InvalidInput,
                     strategy + ": WORLD_SIZE=" + std::to_string(worldSize) +
                         " is not a multiple of LOCAL_WORLD_SIZE=" + std::to_string(localWorldSize) +
                         "; hybrid sharding needs the same number of ranks per machine");
}

TrainingMemory ShardingPlan::predictMemory(int64_t parameters, int bytesPerElement, int optimizerStates, int worldSize,
                                           int localWorldSize) const
{
    // The engine shards over dp_shard: the ranks that differ only in it (not along cp or tp).
    const int inner = std::max(1, tensorParallelSize) * std::max(1, contextParallelSize);
    const int dataRanks = worldSize % inner == 0 ? worldSize / inner : worldSize;
    // HSDP (parallelism_config dp_replicate_size): the shards span dp_shard = the data ranks / replicas.
    const int replicate = hybridReplicas();
    const int shardRanks = replicate > 1 && dataRanks % replicate == 0 ? dataRanks / replicate : dataRanks;
    const int64_t ranks = std::max(1, hybrid ? std::min(dataRanks, std::max(1, localWorldSize)) : shardRanks);
    const int64_t whole = parameters * bytesPerElement;
    const int64_t chunk = (parameters + ranks - 1) / ranks * bytesPerElement;
    const int level = ranks > 1 ? stage : 0;
    TrainingMemory memory;
    // ZeRO-1/2 keep the whole model next to this rank's chunk (the tensor the optimizer steps).
    memory.parameters = level == 0 ? whole : level == 3 ? chunk : whole + chunk;
    memory.gradients = level >= 2 ? chunk : whole;
    memory.optimizerState = (level >= 1 ? chunk : whole) * optimizerStates;
    return memory;
}

std::string ShardingPlan::describe() const
{
    std::string text = source == ShardingSource::Fsdp        ? "FSDP" + std::to_string(fsdpVersion) + " " + strategy
                       : source == ShardingSource::DeepSpeed ? "DeepSpeed " + strategy
                                                             : strategy;
    static const char *const what[] = {"nothing sharded (gradients all-reduced)", "optimizer state sharded",
                                       "gradients and optimizer state sharded",
                                       "parameters, gradients and optimizer state sharded"};
    text += ": " + std::string(what[std::clamp(stage, 0, 3)]);
    if (hybrid)
        text += " within each machine, replicated across machines";
    if (stage == 3)
        text += reshardAfterForward ? "; parameters freed after forward" : "; parameters kept from forward to backward";
    if (offloadOptimizerState || offloadParameters)
        text += std::string("; offload to cpu:") + (offloadOptimizerState ? " optimizer state" : "") +
                (offloadParameters ? " parameters" : "");
    return text;
}

Result<ShardingPlan> shardingPlanFromEnvironment(const Lookup &lookupIn)
{
    const Lookup lookup = lookupIn ? lookupIn : Lookup([](const char *name) { return std::getenv(name); });
    ShardingPlan plan;
    auto fsdp = flag(lookup, accelerateenv::kUseFsdp, false);
    auto deepspeed = flag(lookup, accelerateenv::kUseDeepSpeed, false);
    if (!fsdp)
        return tl::unexpected(fsdp.error());
    if (!deepspeed)
        return tl::unexpected(deepspeed.error());
    if (*fsdp && *deepspeed)
        return makeError(ErrorCode::InvalidInput, std::string(accelerateenv::kUseFsdp) + " and " +
                                                      accelerateenv::kUseDeepSpeed +
                                                      " are both true; choose one distributed_type");
    Result<void> read = *fsdp ? readFsdp(lookup, plan) : *deepspeed ? readDeepSpeed(lookup, plan) : Result<void>();
    if (!read)
        return tl::unexpected(read.error());
    // Accelerate reads the parallelism_config sizes only with ACCELERATE_USE_PARALLELISM_CONFIG.
    auto parallelism = flag(lookup, accelerateenv::kUseParallelismConfig, false);
    if (!parallelism)
        return tl::unexpected(parallelism.error());
    for (auto [variable, size] :
         {std::pair<const char *, int *>{"PARALLELISM_CONFIG_TP_SIZE", &plan.tensorParallelSize},
          {"PARALLELISM_CONFIG_CP_SIZE", &plan.contextParallelSize},
          {"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", &plan.dataParallelReplicateSize}}) {
        const std::string value = get(lookup, variable);
        if (!*parallelism || value.empty() || lower(value) == "none")
            continue;
        char *end = nullptr;
        const long number = std::strtol(value.c_str(), &end, 10);
        if (*end != '\0' || number < 1 || number > (1 << 20))
            return tl::unexpected(invalid(variable, value, "a whole number of ranks, 1 or more"));
        *size = int(number);
    }
    // Accelerate's TorchContextParallelConfig: allgather unless set; read with cp_size above 1.
    if (const std::string exchange = get(lookup, "PARALLELISM_CONFIG_CP_COMM_STRATEGY");
        plan.contextParallelSize > 1 && !exchange.empty()) {
        if (exchange != "allgather" && exchange != "alltoall")
            return tl::unexpected(invalid("PARALLELISM_CONFIG_CP_COMM_STRATEGY", exchange, "allgather or alltoall"));
        plan.contextParallelExchange = exchange;
    }
    return plan;
}

Result<void> applyDeepSpeedJson(const std::string &path, ShardingPlan &plan)
{
    auto text = fileutil::readFile(path, kMaxDeepSpeedConfigBytes);
    if (!text)
        return tl::unexpected(text.error());
    return applyDeepSpeedJsonText(*text, path, plan);
}

Result<void> applyDeepSpeedJsonText(const std::string &text, const std::string &path, ShardingPlan &plan)
{
    using json = nlohmann::json;
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxDeepSpeedConfigBytes;
    limits.subject = "the DeepSpeed config";
    auto parsed = jsonutil::parseJson(text, path, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const json &root = *parsed;
    const auto fail = [&](const std::string &key, const json &value, const std::string &why,
                          ErrorCode code = ErrorCode::InvalidInput) {
        return makeError(code, key + "=" + jsonutil::jsonExcerpt(value) + ": " + why, path);
    };
    if (!root.is_object())
        return makeError(ErrorCode::InvalidInput,
                         "expected a JSON object at the top; got " + jsonutil::jsonExcerpt(root), path);
    // A block of settings: absent or null reads as empty; anything but an object is refused.
    const json empty = json::object();
    const auto block = [&](const json &parent, const std::string &key,
                           const std::string &name) -> Result<const json *> {
        const auto it = parent.find(key);
        if (it == parent.end() || it->is_null())
            return &empty;
        if (!it->is_object())
            return fail(name, *it, "expected an object of settings");
        return &*it;
    };
    for (const char *key : {"optimizer", "scheduler"}) {
        if (const auto it = root.find(key); it != root.end()) {
            const auto type = it->is_object() ? it->find("type") : it->end();
            return fail(key, it->is_object() && type != it->end() ? *type : *it,
                        "DeepSpeed's own optimizer and scheduler are not implemented; the runtime steps the "
                        "program's optimizer and scheduler (remove the block)",
                        ErrorCode::Unsupported);
        }
    }
    for (const char *key : {"pipeline", "activation_checkpointing", "sparse_attention"}) {
        if (const auto it = root.find(key); it != root.end() && !it->empty())
            return fail(key, *it, "not implemented by the runtime", ErrorCode::Unsupported);
    }
    auto zeroBlock = block(root, "zero_optimization", "zero_optimization");
    if (!zeroBlock)
        return tl::unexpected(zeroBlock.error());
    const json &zero = **zeroBlock;
    const json stage = zero.value("stage", json(0));
    const auto stageNumber = jsonutil::integerValue(stage);
    if (!stageNumber || *stageNumber < 0 || *stageNumber > 3)
        return fail("zero_optimization.stage", stage, "expected 0, 1, 2 or 3");
    applyStage(int(*stageNumber), plan);
    std::string devices[2];
    const char *offloads[2] = {"offload_optimizer", "offload_param"};
    for (int i = 0; i < 2; ++i) {
        const std::string name = std::string("zero_optimization.") + offloads[i];
        auto offload = block(zero, offloads[i], name);
        if (!offload)
            return tl::unexpected(offload.error());
        const json device = (*offload)->value("device", json("none"));
        devices[i] = device.is_string() ? device.get<std::string>() : jsonutil::jsonExcerpt(device);
    }
    if (auto offload = applyOffload("zero_optimization.offload_optimizer.device", devices[0],
                                    "zero_optimization.offload_param.device", devices[1], plan);
        !offload) {
        offload.error().context = path;
        return offload;
    }
    if (const auto clip = root.find("gradient_clipping"); clip != root.end() && *clip != "auto") {
        if (!clip->is_number() || !std::isfinite(clip->get<double>()) || clip->get<double>() < 0)
            return fail("gradient_clipping", *clip, "expected a non-negative number or \"auto\"");
        plan.gradientClipping = clip->get<double>();
    }
    if (const auto steps = root.find("gradient_accumulation_steps"); steps != root.end() && *steps != "auto") {
        const auto number = jsonutil::integerValue(*steps);
        if (!number || *number < 1 || *number > std::numeric_limits<int>::max())
            return fail("gradient_accumulation_steps", *steps,
                        "expected a whole number from 1 to " + std::to_string(std::numeric_limits<int>::max()) +
                            " or \"auto\"");
        plan.gradientAccumulationSteps = int(*number);
    }
    if (const auto bucket = zero.find("stage3_prefetch_bucket_size"); bucket != zero.end() && *bucket != "auto") {
        if (!bucket->is_number() || !std::isfinite(bucket->get<double>()) || bucket->get<double>() < 0)
            return fail("zero_optimization.stage3_prefetch_bucket_size", *bucket,
                        "expected a non-negative number or \"auto\"");
        if (bucket->get<double>() == 0) {
            plan.forwardPrefetch = false;
            plan.backwardPrefetch.clear();
        }
    }
    for (const char *key : {"stage3_gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save"}) {
        if (const auto save = zero.find(key); save != zero.end()) {
            if (!save->is_boolean())
                return fail(std::string("zero_optimization.") + key, *save, "expected true or false");
            plan.zero3Save16BitModel = save->get<bool>();
        }
    }
    return {};
}

const char *stateDictTypeName(StateDictType type)
{
    switch (type) {
    case StateDictType::Full:
        return fsdp::kFullStateDict;
    case StateDictType::Sharded:
        return fsdp::kShardedStateDict;
    case StateDictType::Local:
        return fsdp::kLocalStateDict;
    }
    return fsdp::kFullStateDict;
}

} // namespace accel::runtime
