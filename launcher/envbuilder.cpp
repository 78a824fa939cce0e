#include "launcher/envbuilder.h"

#include "core/common/accelerateenv.h"
#include "core/common/fsdpvalues.h"
#include "core/common/programs.h"
#include "core/common/text.h"
#include "launcher/launchflags.h"

#include "core/rundir/runlayout.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace accel::launcher {

namespace {

using text::lower;
using text::upper;

std::vector<std::string> split(const std::string &text, char separator = ',')
{
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, separator))
        parts.push_back(part);
    return parts;
}

const ArgValue *findArg(const LaunchSettings &settings, const std::string &name)
{
    auto it = settings.args.find(name);
    return it == settings.args.end() ? nullptr : &it->second;
}

// Python's str() of an argument as Accelerate stored it: booleans become True/False.
std::string pythonText(const ArgValue &value)
{
    return value.isBool ? pythonBool(value.text) : value.text;
}

// Python's str() of the value Accelerate's args namespace holds for this argument: a config
// value as PyYAML typed it; a flag as its parser typed it (str_to_bool flags hold 1/0, Python
// bool() flags True for any non-empty text, store_true switches True/False).
std::string argText(const std::string &name, const ArgValue &value)
{
    if (value.origin == Origin::Config)
        return pythonText(value);
    const LaunchFlag *flag = findLaunchFlag(name);
    const LaunchFlag::Kind kind = flag ? flag->kind : LaunchFlag::Kind::Value;
    switch (kind) {
    case LaunchFlag::Kind::Switch:
        return pythonBool(value.text);
    case LaunchFlag::Kind::StrToBool:
        return parseBool(value.text) ? "1" : "0";
    case LaunchFlag::Kind::PythonBool:
        return value.origin == Origin::Default ? value.text : (value.text.empty() ? "False" : "True");
    case LaunchFlag::Kind::BoolText:
    case LaunchFlag::Kind::Value:
        break;
    }
    return value.text;
}

// The three booleans of fp8_override_linear_precision from a list, a bool, or text such as
// "(false, false, true)" / "1,0,1".
std::vector<std::string> precisionOverride(const ArgValue &value)
{
    std::vector<std::string> parts;
    if (value.origin == Origin::Config && !value.list.empty()) {
        for (const std::string &item : value.list)
            parts.push_back(pythonBool(item));
    } else if (value.origin == Origin::Config && value.isBool) {
        parts.assign(3, pythonBool(value.text));
    } else {
        std::string text = value.text;
        text.erase(std::remove_if(text.begin(), text.end(),
                                  [](char c) { return c == '(' || c == ')' || c == '[' || c == ']' || c == ' '; }),
                   text.end());
        for (const std::string &part : split(text))
            parts.push_back(value.origin == Origin::Flag ? part : pythonBool(part));
    }
    parts.resize(3, "False");
    return parts;
}

void addFp8Block(const LaunchSettings &settings, EnvMap &env)
{
    for (const auto &[name, value] : settings.args) {
        if (name.rfind("fp8_", 0) != 0)
            continue;
        if (name == "fp8_override_linear_precision") {
            static const char *const names[] = {accelerateenv::kFp8OverrideFprop, accelerateenv::kFp8OverrideDgrad,
                                                accelerateenv::kFp8OverrideWgrad};
            const std::vector<std::string> parts = precisionOverride(value);
            for (int i = 0; i < 3; ++i)
                env[names[i]] = parts[static_cast<size_t>(i)];
            continue;
        }
        // The backend is upper-cased: the training side parses it case-sensitively.
        env[accelerateenv::kFp8Prefix + upper(name.substr(4))] =
            name == "fp8_backend" ? upper(value.text) : argText(name, value);
    }
}

void addDynamoBlock(const LaunchSettings &settings, EnvMap &env)
{
    env[accelerateenv::kDynamoBackend] = upper(settings.dynamoBackend);
    env[accelerateenv::kDynamoMode] = settings.dynamoMode;
    env[accelerateenv::kDynamoUseFullgraph] = settings.dynamoUseFullgraph ? "True" : "False";
    env[accelerateenv::kDynamoUseDynamic] = settings.dynamoUseDynamic ? "True" : "False";
    env[accelerateenv::kDynamoUseRegionalCompilation] = settings.dynamoUseRegionalCompilation ? "True" : "False";
}

void addFsdpBlock(const LaunchSettings &settings, EnvMap &env)
{
    env[accelerateenv::kUseFsdp] = "true";
    auto text = [&](const char *name, const char *fallback) {
        const ArgValue *value = findArg(settings, name);
        return value ? pythonText(*value) : std::string(fallback);
    };
    auto always = [&](const char *var, const char *name, const char *fallback, bool lowerCase) {
        const std::string value = text(name, fallback);
        env[var] = lowerCase ? lower(value) : value;
    };
    auto ifSet = [&](const char *var, const char *name) {
        if (const ArgValue *value = findArg(settings, name); value && !value->text.empty())
            env[var] = pythonText(*value);
    };
    always("FSDP_VERSION", "fsdp_version", "1", false);
    always("FSDP_SHARDING_STRATEGY", "fsdp_sharding_strategy", fsdp::kFullShard, false);
    always("FSDP_RESHARD_AFTER_FORWARD", "fsdp_reshard_after_forward", "true", true);
    always("FSDP_OFFLOAD_PARAMS", "fsdp_offload_params", "false", true);
    always("FSDP_MIN_NUM_PARAMS", "fsdp_min_num_params", fsdp::kDefaultMinNumParams, false);
    ifSet("FSDP_AUTO_WRAP_POLICY", "fsdp_auto_wrap_policy");
    ifSet("FSDP_TRANSFORMER_CLS_TO_WRAP", "fsdp_transformer_layer_cls_to_wrap");
    ifSet("FSDP_BACKWARD_PREFETCH", "fsdp_backward_prefetch");
    ifSet("FSDP_STATE_DICT_TYPE", "fsdp_state_dict_type");
    always("FSDP_FORWARD_PREFETCH", "fsdp_forward_prefetch", "false", true);
    always("FSDP_USE_ORIG_PARAMS", "fsdp_use_orig_params", "true", true);
    always("FSDP_CPU_RAM_EFFICIENT_LOADING", "fsdp_cpu_ram_efficient_loading", "true", true);
    always("FSDP_SYNC_MODULE_STATES", "fsdp_sync_module_states", "true", true);
    always("FSDP_ACTIVATION_CHECKPOINTING", "fsdp_activation_checkpointing", "false", true);
    always("FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "fsdp_activation_checkpointing_offload", "false", true);
    ifSet("FSDP_IGNORED_MODULES", "fsdp_ignored_modules");
}

// MEGATRON_LM_*: every megatron_lm_ argument that is not None (the flags with defaults always).
void addMegatronBlock(const LaunchSettings &settings, EnvMap &env)
{
    env[accelerateenv::kUseMegatronLm] = "true";
    for (const auto &[name, value] : settings.args) {
        const LaunchFlag *flag = findLaunchFlag(name);
        const bool isNone =
            value.text.empty() && !(flag && flag->kind == LaunchFlag::Kind::PythonBool && value.origin == Origin::Flag);
        if (name.rfind("megatron_lm_", 0) == 0 && !isNone)
            env[upper(name)] = argText(name, value);
    }
}

// PARALLELISM_CONFIG_*: the sizes and backends always, the context-parallel strategy only when
// cp_size > 1, the sequence-parallel details only when sp_size > 1 (unset ones as Python's None).
void addParallelismBlock(const LaunchSettings &settings, EnvMap &env)
{
    env[accelerateenv::kUseParallelismConfig] = "true";
    auto text = [&](const std::string &key) {
        const ArgValue *value = findArg(settings, "parallelism_config_" + key);
        return value && !value->text.empty() ? argText("parallelism_config_" + key, *value) : std::string("None");
    };
    auto above1 = [&](const std::string &key) { return std::atoi(text(key).c_str()) > 1; };
    for (const char *key :
         {"dp_replicate_size", "dp_shard_size", "tp_size", "cp_size", "cp_backend", "sp_size", "sp_backend"})
        env["PARALLELISM_CONFIG_" + upper(key)] = text(key);
    if (above1("cp_size"))
        env["PARALLELISM_CONFIG_CP_COMM_STRATEGY"] = text("cp_comm_strategy");
    if (above1("sp_size")) {
        for (const char *key : {"sp_seq_length", "sp_seq_length_is_variable", "sp_attn_implementation"})
            env["PARALLELISM_CONFIG_" + upper(key)] = text(key);
    }
}

// torchrun's name for NCCL's asynchronous error handling: TORCH_NCCL_ASYNC_ERROR_HANDLING from torch
// 2.2 on (and when the version is unknown), NCCL_ASYNC_ERROR_HANDLING before.
std::string ncclErrorHandlingVariable(const std::string &torchVersion)
{
    int major = 0, minor = 0;
    if (std::sscanf(torchVersion.c_str(), "%d.%d", &major, &minor) == 2 && (major < 2 || (major == 2 && minor < 2)))
        return "NCCL_ASYNC_ERROR_HANDLING";
    return "TORCH_NCCL_ASYNC_ERROR_HANDLING";
}

void addDeepSpeedBlock(const LaunchSettings &settings, const EnvMap &base, EnvMap &env)
{
    // PYTHONPATH = existing entries + the working directory (Accelerate's env_var_path_add).
    std::string path;
    if (auto it = base.find("PYTHONPATH"); it != base.end()) {
        for (const std::string &entry : split(it->second, ':')) {
            if (!entry.empty())
                path += entry + ":";
        }
    }
    env["PYTHONPATH"] = path + settings.workingDirectory;
    std::string fields;
    for (const std::string &field : settings.deepspeedFieldsFromConfig)
        fields += (fields.empty() ? "" : ",") + lower(field);
    env[accelerateenv::kDeepSpeedConfigFields] = fields;
    env[accelerateenv::kUseDeepSpeed] = "true";
    struct Entry {
        const char *arg;
        const char *var;
        bool lowerCase;
    };
    static const Entry entries[] = {
        {"zero_stage", accelerateenv::kDeepSpeedZeroStage, false},
        {"gradient_accumulation_steps", accelerateenv::kGradientAccumulationSteps, false},
        {"gradient_clipping", accelerateenv::kGradientClipping, true},
        {"offload_optimizer_device", accelerateenv::kDeepSpeedOffloadOptimizerDevice, true},
        {"offload_param_device", accelerateenv::kDeepSpeedOffloadParamDevice, true},
        {"zero3_init_flag", accelerateenv::kDeepSpeedZero3Init, true},
        {"zero3_save_16bit_model", accelerateenv::kDeepSpeedZero3Save16BitModel, true},
        {"deepspeed_config_file", accelerateenv::kDeepSpeedConfigFile, false},
        {"deepspeed_moe_layer_cls_names", accelerateenv::kDeepSpeedMoeLayerClassNames, false},
    };
    for (const Entry &entry : entries) {
        if (const ArgValue *value = findArg(settings, entry.arg); value && !value->text.empty()) {
            const std::string text = pythonText(*value);
            env[entry.var] = entry.lowerCase ? lower(text) : text;
        }
    }
}

void addRankVariables(const LaunchSettings &settings, const EnvMap &base, RankPlacement placement, EnvMap &env)
{
    const int perNode = settings.processesPerNode();
    const std::string rank = std::to_string(globalRank(settings, placement.localRank));
    env["RANK"] = rank;
    env["LOCAL_RANK"] = std::to_string(placement.localRank);
    env["WORLD_SIZE"] = std::to_string(settings.numProcesses);
    env["LOCAL_WORLD_SIZE"] = std::to_string(perNode);
    env["GROUP_RANK"] = std::to_string(settings.machineRank);
    env["GROUP_WORLD_SIZE"] = std::to_string(settings.numMachines);
    // One role for every rank, so the role rank and size equal the global ones.
    env["ROLE_NAME"] = settings.role;
    env["ROLE_RANK"] = rank;
    env["ROLE_WORLD_SIZE"] = std::to_string(settings.numProcesses);
    env["MASTER_ADDR"] = settings.masterAddress();
    env["MASTER_PORT"] = std::to_string(settings.mainProcessPort);
    env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(placement.restartCount);
    env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(settings.maxRestarts);
    env["TORCHELASTIC_RUN_ID"] = settings.rendezvousId;
    // No agent store: rank 0 hosts the c10d TCPStore itself.
    env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
    const std::string ncclVariable = ncclErrorHandlingVariable(settings.torchVersion);
    if (auto it = base.find(ncclVariable); it == base.end())
        env[ncclVariable] = "1";
    if (!settings.runDirectory.empty())
        env["TORCHELASTIC_ERROR_FILE"] = settings.runDirectory + "/logs/rank" + rank + ".error.json";
}

} // namespace

const char *launcherKindName(LauncherKind kind)
{
    switch (kind) {
    case LauncherKind::Simple:
        return "simple";
    case LauncherKind::Torchrun:
        return "torchrun";
    case LauncherKind::DeepSpeed:
        return "deepspeed";
    }
    return "simple";
}

bool parseBool(const std::string &text, bool *ok)
{
    const std::string value = lower(text);
    if (ok)
        *ok = true;
    if (value == "true" || value == "1" || value == "yes" || value == "y" || value == "on" || value == "t")
        return true;
    if (value == "false" || value == "0" || value == "no" || value == "n" || value == "off" || value == "f")
        return false;
    if (ok)
        *ok = false;
    return false;
}

std::string pythonBool(const std::string &text)
{
    return parseBool(text) ? "True" : "False";
}

std::string deviceMaskVariableFor(const std::string &distributedType)
{
    static const std::map<std::string, std::string> masks = {
        {"MULTI_XPU", "ZE_AFFINITY_MASK"},           {"MULTI_MLU", "MLU_VISIBLE_DEVICES"},
        {"MULTI_SDAA", "SDAA_VISIBLE_DEVICES"},      {"MULTI_MUSA", "MUSA_VISIBLE_DEVICES"},
        {"MULTI_NPU", "ASCEND_RT_VISIBLE_DEVICES"},  {"MULTI_HPU", "HABANA_VISIBLE_MODULES"},
        {"MULTI_NEURON", "NEURON_RT_VISIBLE_CORES"},
    };
    auto it = masks.find(distributedType);
    return it == masks.end() ? std::string("CUDA_VISIBLE_DEVICES") : it->second;
}

int globalRank(const LaunchSettings &settings, int localRank)
{
    return settings.machineRank * settings.processesPerNode() + localRank;
}

bool usesRankVariables(const LaunchSettings &settings)
{
    return settings.launcher != LauncherKind::Simple || settings.numProcesses > 1 || settings.numMachines > 1;
}

EnvMap buildRankEnvironment(const LaunchSettings &settings, const EnvMap &base, RankPlacement placement)
{
    EnvMap env = base;
    const bool simple = settings.launcher == LauncherKind::Simple;
    const bool deepspeed = settings.launcher == LauncherKind::DeepSpeed;

    if (settings.debug)
        env[accelerateenv::kDebugMode] = "true";
    if (!settings.gpuIds.empty() && settings.gpuIds != "all")
        env[settings.deviceMaskVariable.empty() ? deviceMaskVariableFor(settings.distributedType)
                                                : settings.deviceMaskVariable] = settings.gpuIds;
    if (settings.mixedPrecision == "fp8")
        addFp8Block(settings, env);
    env[accelerateenv::kMixedPrecision] = settings.mixedPrecision;
    if (!deepspeed)
        addDynamoBlock(settings, env);

    if (simple) {
        env[accelerateenv::kUseCpu] = settings.cpu ? "True" : "False";
        if (settings.cpu) {
            env["KMP_AFFINITY"] = "granularity=fine,compact,1,0";
            env["KMP_BLOCKTIME"] = "1";
        }
        if (settings.numProcesses > 1 || settings.numMachines > 1) {
            env["MASTER_ADDR"] = settings.masterAddress();
            env["MASTER_PORT"] = std::to_string(settings.mainProcessPort);
        }
    }
    if (settings.useFsdp && !simple && !deepspeed)
        addFsdpBlock(settings, env);
    if (settings.useMegatron && !simple && !deepspeed)
        addMegatronBlock(settings, env);
    if (deepspeed) {
        addDeepSpeedBlock(settings, base, env);
        // torchrun's own rule: one thread per worker when nothing was asked for.
        if (base.find("OMP_NUM_THREADS") == base.end() && settings.processesPerNode() > 1)
            env["OMP_NUM_THREADS"] = "1";
    } else {
        env["OMP_NUM_THREADS"] = std::to_string(settings.threadsPerProcess);
    }
    if (settings.enableCpuAffinity)
        env[accelerateenv::kCpuAffinity] = "1";
    if (settings.useParallelismConfig && !simple)
        addParallelismBlock(settings, env);

    if (usesRankVariables(settings))
        addRankVariables(settings, base, placement, env);

    if (!settings.runDirectory.empty()) {
        env["ACCEL_RUN_DIR"] = settings.runDirectory;
        env["ACCEL_METRICS_FILE"] =
            settings.runDirectory + "/" + rundir::metricsFile(globalRank(settings, placement.localRank));
        // Last on the path: a sitecustomize of the user's own PYTHONPATH entries still comes first.
        if (settings.trackerStartupHook && settings.program.kind != ProgramSpec::Kind::Job) {
            const auto it = env.find("PYTHONPATH");
            const std::string before = it == env.end() || it->second.empty() ? std::string() : it->second + ":";
            env["PYTHONPATH"] = before + settings.runDirectory + "/" + rundir::file::PythonStartup;
        }
    }
    return env;
}

std::vector<std::string> buildRankCommand(const LaunchSettings &settings, const EnvMap &base)
{
    const ProgramSpec &program = settings.program;
    std::vector<std::string> command;
    const auto exec = base.find(pythonProgramVariable);
    const std::string python = scriptPython(program.python, exec != base.end() ? exec->second.c_str() : nullptr);
    switch (program.kind) {
    case ProgramSpec::Kind::PythonScript:
        command = {python, "-u", program.target};
        break;
    case ProgramSpec::Kind::PythonModule:
        command = {python, "-u", "-m", program.target};
        break;
    case ProgramSpec::Kind::Executable:
        command = {program.target};
        break;
    case ProgramSpec::Kind::Job:
        command = {program.workerProgram, program.target};
        break;
    }
    command.insert(command.end(), program.args.begin(), program.args.end());
    return command;
}

EnvMap environmentDifference(const EnvMap &base, const EnvMap &env)
{
    EnvMap difference;
    for (const auto &[name, value] : env) {
        auto it = base.find(name);
        if (it == base.end() || it->second != value)
            difference[name] = value;
    }
    return difference;
}

} // namespace accel::launcher
