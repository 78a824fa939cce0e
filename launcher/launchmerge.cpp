#include "launcher/launchmerge.h"
#include "core/common/accelerateenv.h"
#include "core/common/cputopology.h"
#include "core/common/text.h"
#include "core/config/validation.h"
#include "launcher/rendezvousconf.h"

#include "launcher/envbuilder.h"
#include "launcher/launchflags.h"

#ifdef ACCEL_LAUNCHER_HAVE_CONFIG
#include "core/config/configvalue.h"
#include "launcher/nativejobcheck.h"
#endif

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace accel::launcher {

namespace {

using text::upper;

class Merger {
public:
    Merger(const LaunchRequest &request, const std::optional<ConfigView> &config, const HostFacts &host)
        : m_request(request), m_config(config), m_host(host)
    {}

    Result<LaunchSettings> run();

private:
    bool typed(const std::string &name) const { return m_request.flags.count(name) > 0; }
    std::optional<std::string> flag(const std::string &name) const
    {
        auto it = m_request.flags.find(name);
        return it == m_request.flags.end() ? std::nullopt : std::optional<std::string>(it->second);
    }
    const ArgValue *top(const std::string &key) const
    {
        if (!m_config)
            return nullptr;
        auto it = m_config->top.find(key);
        return it == m_config->top.end() || it->second.text.empty() ? nullptr : &it->second;
    }
    const ArgMap *block(const std::string &name) const
    {
        if (!m_config)
            return nullptr;
        auto it = m_config->blocks.find(name);
        return it == m_config->blocks.end() ? nullptr : &it->second;
    }
    // Flag, else top-level config key (Accelerate: applied only while the arg is still None).
    std::optional<std::string> scalar(const std::string &name, const std::string &configKey = {}) const
    {
        if (auto value = flag(name))
            return value;
        if (const ArgValue *value = top(configKey.empty() ? name : configKey))
            return value->text;
        return std::nullopt;
    }
    Result<int> toInt(const std::string &name, const std::string &text, int minimum) const
    {
        if (auto value = wholeNumberAtLeast(text, minimum))
            return *value;
        return makeError(ErrorCode::InvalidInput,
                         name + ": expected an integer >= " + std::to_string(minimum) + ", got '" + text + "'",
                         typed(name) || !m_config ? std::string("--") + name : m_config->path);
    }

    Result<void> fillBlockArgs();
    void noteQuirks();
    Result<void> decideMode();
    Result<void> applyScalars();
    void decideThreads();
    Result<void> validate();

    const LaunchRequest &m_request;
    const std::optional<ConfigView> &m_config;
    const HostFacts &m_host;
    LaunchSettings m_settings;
    bool m_multiGpu = false;
    bool m_modeFlagTyped = false;
};

const std::set<std::string> &blockGroups()
{
    static const std::set<std::string> groups = {"fsdp", "fp8", "megatron", "parallelism", "deepspeed", "mpi"};
    return groups;
}

// Python's str() of a float typed on the command line.
std::string pythonFloatText(double value, const std::string &typed)
{
#ifdef ACCEL_LAUNCHER_HAVE_CONFIG
    (void)typed;
    return config::pythonFloatRepr(value);
#else
    (void)value;
    return typed;
#endif
}

// A typed value the way Accelerate's parser stores it (int("010") is 10, float("1") is 1.0), or an
// error naming the flag, like argparse's "invalid int value".
Result<std::string> typedValue(const LaunchFlag &spec, const std::string &text)
{
    const FlagType type = flagType(spec.name);
    if (spec.kind == LaunchFlag::Kind::StrToBool) {
        bool ok = false;
        const bool value = parseBool(text, &ok);
        if (!ok)
            return makeError(ErrorCode::InvalidInput,
                             "expected true/false, yes/no, on/off, t/f, y/n or 1/0; got '" + text + "'",
                             std::string("--") + spec.name);
        return std::string(value ? "1" : "0");
    }
    if (type == FlagType::Text)
        return text;
    try {
        size_t used = 0;
        if (type == FlagType::Integer) {
            const long long value = std::stoll(text, &used);
            if (used == text.size())
                return std::to_string(value);
        } else {
            const double value = std::stod(text, &used);
            if (used == text.size())
                return pythonFloatText(value, text);
        }
    } catch (const std::exception &) {
    }
    return makeError(ErrorCode::InvalidInput,
                     std::string("expected ") + (type == FlagType::Integer ? "an integer" : "a number") + "; got '" +
                         text + "'",
                     std::string("--") + spec.name);
}

Result<void> Merger::fillBlockArgs()
{
    // Flag defaults first, then typed flags, then config blocks (which beat defaults, not typed flags).
    for (const LaunchFlag &spec : launchFlags()) {
        if (!blockGroups().count(spec.group))
            continue;
        const bool isBool = spec.kind != LaunchFlag::Kind::Value;
        if (auto value = flag(spec.name)) {
            auto typed = typedValue(spec, *value);
            if (!typed)
                return tl::unexpected(typed.error());
            m_settings.args[spec.name] = ArgValue{*typed, Origin::Flag, isBool, {}};
        } else if (spec.defaultValue)
            m_settings.args[spec.name] = ArgValue{spec.defaultValue, Origin::Default, isBool, {}};
        else if (spec.kind == LaunchFlag::Kind::Switch)
            m_settings.args[spec.name] = ArgValue{"false", Origin::Default, true, {}};
    }
    static const std::map<std::string, std::string> prefixes = {
        {"fsdp_config", "fsdp_"},
        {"fp8_config", "fp8_"},
        {"dynamo_config", "dynamo_"},
        {"deepspeed_config", ""},
        {"megatron_lm_config", "megatron_lm_"},
        {"mpirun_config", ""},
        {"parallelism_config", "parallelism_config_"},
    };
    for (const auto &[blockName, prefix] : prefixes) {
        const ArgMap *values = block(blockName);
        if (!values)
            continue;
        for (const auto &[key, value] : *values) {
            const std::string name = key.rfind(prefix, 0) == 0 ? key : prefix + key;
            if (blockName == "deepspeed_config")
                m_settings.deepspeedFieldsFromConfig.push_back(name);
            if (typed(name) || blockName == "dynamo_config")
                continue;
            ArgValue copy = value;
            copy.origin = Origin::Config;
            m_settings.args[name] = copy;
        }
    }
    if (typed("fp8_override_linear_precision")) {
        // Accelerate splits the flag at commas and parses each part with str_to_bool.
        std::string parts;
        const std::string &text = m_settings.args["fp8_override_linear_precision"].text;
        size_t start = 0;
        while (true) {
            const size_t comma = text.find(',', start);
            const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            bool ok = false;
            const bool value = parseBool(part, &ok);
            if (!ok)
                return makeError(ErrorCode::InvalidInput,
                                 "expected comma-separated booleans such as false,false,true; got '" + text + "'",
                                 "--fp8_override_linear_precision");
            parts += std::string(parts.empty() ? "" : ",") + (value ? "1" : "0");
            if (comma == std::string::npos)
                break;
            start = comma + 1;
        }
        m_settings.args["fp8_override_linear_precision"].list.clear();
        m_settings.args["fp8_override_linear_precision"].text = parts;
    }
    return {};
}

// Places where accelerate launch silently drops or bends a value: the run gets what Accelerate
// computes, and a note says so.
void Merger::noteQuirks()
{
    auto &notes = m_settings.notes;
    // fp8_config spellings of the questionnaire (see core/config/configblocks.h).
    static const std::pair<const char *, const char *> fp8Long[] = {
        {"fp8_amax_history_length", "amax_history_len"},
        {"fp8_amax_compute_algorithm", "amax_compute_algo"},
        {"fp8_optimization_level", "opt_level"},
    };
    if (m_settings.mixedPrecision == "fp8") {
        for (const auto &[name, recipeKey] : fp8Long) {
            auto it = m_settings.args.find(name);
            if (it != m_settings.args.end() && it->second.origin == Origin::Config)
                notes.push_back("fp8_config." + std::string(name).substr(4) + ": " + it->second.text +
                                " has no effect: accelerate launch exports it as " + accelerateenv::kFp8Prefix +
                                upper(std::string(name).substr(4)) + ", which no FP8 recipe reads; write " + recipeKey +
                                " instead");
        }
        auto it = m_settings.args.find("fp8_override_linear_precision");
        if (it != m_settings.args.end() && it->second.origin == Origin::Config && it->second.list.empty())
            notes.push_back("fp8_config.override_linear_precision: " + it->second.text +
                            " is exported as three booleans (accelerate launch indexes the " +
                            (it->second.isBool ? "bool and fails" : "text character by character") +
                            "; write a list such as [false, false, true])");
    }
    for (const LaunchFlag &spec : launchFlags()) {
        if (!typed(spec.name))
            continue;
        bool ok = false;
        if (spec.kind == LaunchFlag::Kind::PythonBool && !parseBool(*flag(spec.name), &ok) && ok)
            notes.push_back(std::string("--") + spec.name + " " + *flag(spec.name) +
                            " is exported as True: accelerate launch reads this flag with Python's bool(), for "
                            "which any text but an empty one is true");
        if (isRetiredFlag(spec.name))
            notes.push_back(std::string("--") + spec.name +
                            " (Accelerate 1.0) is accepted and ignored: current Accelerate has no such flag");
    }
    if (typed("gradient_accumulation_steps") && !m_settings.useDeepSpeed)
        notes.push_back("--gradient_accumulation_steps is ignored without DeepSpeed (accelerate launch passes it "
                        "only to DeepSpeed); pass gradient_accumulation_steps to Accelerator() in the script");
    if (m_multiGpu && m_host.acceleratorCount == 0 && !typed("cpu"))
        notes.push_back(
            std::string(typed("multi_gpu") ? "--multi_gpu" : "distributed_type " + m_settings.distributedType) +
            ": no GPU was found on this machine; the ranks will fail to use CUDA (pass --cpu to "
            "train on CPU)");
    if (auto it = m_settings.args.find("fp8_backend");
        it != m_settings.args.end() && it->second.origin == Origin::Flag && it->second.text != upper(it->second.text)) {
        m_settings.notes.push_back(
            "--fp8_backend " + it->second.text + " is exported as " + upper(it->second.text) +
            " (accelerate launch exports the lower-case value, which the training side rejects)");
    }
}

Result<void> Merger::decideMode()
{
    static const char *const exclusive[] = {"cpu", "multi_gpu", "tpu", "use_deepspeed", "use_fsdp"};
    std::vector<std::string> given;
    for (const char *name : exclusive) {
        if (typed(name))
            given.push_back(std::string("--") + name);
    }
    if (given.size() > 1)
        return makeError(ErrorCode::InvalidInput,
                         "only one of --cpu, --multi_gpu, --tpu, --use_deepspeed, --use_fsdp may be given; got " +
                             given[0] + " and " + given[1]);
    if (typed("module") && typed("no_python"))
        return makeError(ErrorCode::InvalidInput, "--module and --no_python cannot be combined");
    if (typed("tpu") || typed("tpu_cluster"))
        return makeError(ErrorCode::Unsupported, "TPU launches are not supported by accel launch (--tpu)");

    m_multiGpu = typed("multi_gpu");
    m_settings.useDeepSpeed = typed("use_deepspeed");
    m_settings.useFsdp = typed("use_fsdp");
    m_settings.useMegatron = typed("use_megatron_lm");
    m_settings.useParallelismConfig = typed("use_parallelism_config");
    m_modeFlagTyped = m_multiGpu || m_settings.useDeepSpeed || m_settings.useFsdp || m_settings.useMegatron;
    if (m_config && !m_modeFlagTyped) {
        const ArgValue *type = top("distributed_type");
        const std::string distributed = type ? type->text : std::string("NO");
        if (distributed == "XLA")
            return makeError(ErrorCode::Unsupported, "distributed_type: XLA (TPU) is not supported by accel launch",
                             m_config->path);
        m_multiGpu = distributed.rfind("MULTI_", 0) == 0 && distributed != "MULTI_CPU";
        m_settings.useFsdp = distributed == "FSDP";
        m_settings.useDeepSpeed = distributed == "DEEPSPEED";
        m_settings.useMegatron = distributed == "MEGATRON_LM";
        if (!typed("use_parallelism_config")) {
            const ArgMap *parallelism = block("parallelism_config");
            m_settings.useParallelismConfig = parallelism && !parallelism->empty();
        }
        m_settings.distributedType = distributed;
    }
    return {};
}

Result<void> Merger::applyScalars()
{
    // Processes and machines.
    if (auto text = scalar("num_processes")) {
        if (*text == "-1")
            return makeError(ErrorCode::InvalidInput,
                             "num_processes: -1 means it must be given on the command line; pass --num_processes N",
                             m_config ? m_config->path : std::string());
        auto value = toInt("num_processes", *text, 0);
        if (!value)
            return tl::unexpected(value.error());
        m_settings.numProcesses = *value;
    } else {
        m_settings.numProcesses = m_host.acceleratorCount;
    }
    if (m_settings.numProcesses == 0) {
        m_settings.numProcesses = 1;
        m_settings.notes.push_back("no accelerator found and no --num_processes: accelerate launch would ask for 0 "
                                   "processes; accel launch starts 1");
    }
    if (auto text = scalar("num_machines")) {
        auto value = toInt("num_machines", *text, 1);
        if (!value)
            return tl::unexpected(value.error());
        m_settings.numMachines = *value;
    }
    if (auto text = scalar("machine_rank")) {
        auto value = toInt("machine_rank", *text, 0);
        if (!value)
            return tl::unexpected(value.error());
        m_settings.machineRank = *value;
    }
    if (auto text = scalar("main_process_ip"))
        m_settings.mainProcessIp = *text;
    if (auto text = scalar("main_process_port")) {
        auto value = toInt("main_process_port", *text, 0);
        if (!value)
            return tl::unexpected(value.error());
        if (*value > 65535)
            return makeError(ErrorCode::InvalidInput, "main_process_port: expected 0-65535, got " + *text);
        m_settings.mainProcessPort = *value;
        m_settings.mainProcessPortExplicit = true;
    }
    m_settings.gpuIds = scalar("gpu_ids").value_or("all");

    // Precision, debug, CPU.
    if (auto text = flag("mixed_precision")) {
        m_settings.mixedPrecision = *text;
    } else if (const ArgValue *value = top("mixed_precision")) {
        m_settings.mixedPrecision = value->text;
        m_settings.deepspeedFieldsFromConfig.push_back("mixed_precision");
    }
    if (m_settings.mixedPrecision.empty())
        m_settings.mixedPrecision = "no";
    m_settings.debug = typed("debug") || (top("debug") && parseBool(top("debug")->text));
    m_settings.cpu = typed("cpu") || (top("use_cpu") && parseBool(top("use_cpu")->text));

    // Dynamo: flag, else dynamo_config, else "no".
    const ArgMap *dynamo = block("dynamo_config");
    auto dynamoValue = [&](const std::string &name) -> std::optional<std::string> {
        if (auto value = flag(name))
            return value;
        if (dynamo) {
            const std::string shortName = name.substr(std::string("dynamo_").size());
            for (const std::string &key : {name, shortName}) {
                if (auto it = dynamo->find(key); it != dynamo->end())
                    return it->second.text;
            }
        }
        return std::nullopt;
    };
    m_settings.dynamoBackend = upper(dynamoValue("dynamo_backend").value_or("no"));
    m_settings.dynamoMode = dynamoValue("dynamo_mode").value_or("default");
    m_settings.dynamoUseFullgraph = parseBool(dynamoValue("dynamo_use_fullgraph").value_or("false"));
    m_settings.dynamoUseDynamic = parseBool(dynamoValue("dynamo_use_dynamic").value_or("false"));
    m_settings.dynamoUseRegionalCompilation =
        parseBool(dynamoValue("dynamo_use_regional_compilation").value_or("false"));

    // Launcher-level settings. Accelerate ignores these config keys (their flags have defaults);
    // accel honours them when no flag was typed and says so.
    m_settings.enableCpuAffinity = typed("enable_cpu_affinity");
    if (!typed("enable_cpu_affinity") && top("enable_cpu_affinity") && parseBool(top("enable_cpu_affinity")->text)) {
        m_settings.enableCpuAffinity = true;
        m_settings.notes.push_back("config enable_cpu_affinity: true is applied (accelerate launch ignores it)");
    }
    m_settings.sameNetwork = typed("same_network") || (top("same_network") && parseBool(top("same_network")->text));
    RendezvousRequest rendezvous;
    rendezvous.backend = scalar("rdzv_backend");
    rendezvous.backendFromConfig = !typed("rdzv_backend") && rendezvous.backend.has_value();
    rendezvous.conf = flag("rdzv_conf");
    rendezvous.endpoint = flag("rdzv_endpoint");
    rendezvous.machineRankGiven = typed("machine_rank") || m_settings.machineRank != 0;
    if (auto ok = decideRendezvous(m_settings, rendezvous); !ok)
        return tl::unexpected(ok.error());
    m_settings.role = flag("role").value_or("default");
    auto restarts = toInt("max_restarts", flag("max_restarts").value_or("0"), 0);
    if (!restarts)
        return tl::unexpected(restarts.error());
    m_settings.maxRestarts = *restarts;
    return {};
}

void Merger::decideThreads()
{
    if (auto text = flag("num_cpu_threads_per_process")) {
        m_settings.threadsPerProcess = std::max(1, std::atoi(text->c_str()));
        return;
    }
    auto envInt = [&](const std::vector<std::string> &names, int fallback) {
        for (const std::string &name : names) {
            auto it = m_request.environment.find(name);
            if (it != m_request.environment.end() && !it->second.empty())
                return std::atoi(it->second.c_str());
        }
        return fallback;
    };
    m_settings.threadsPerProcess = std::max(1, envInt({"OMP_NUM_THREADS"}, 1));
    // Accelerate tests use_cpu here, not --cpu: with a config file it is the config's use_cpu.
    const bool useCpu = m_config ? (top("use_cpu") && parseBool(top("use_cpu")->text)) : m_settings.cpu;
    if (useCpu && envInt({"OMP_NUM_THREADS"}, 0) == 0) {
        const int localSize = envInt({"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"},
                                     std::max(m_settings.numProcesses / std::max(1, m_settings.numMachines), 1));
        m_settings.threadsPerProcess = threadsPerRank(m_host.physicalCores, localSize);
    }
}

Result<void> Merger::validate()
{
    LaunchSettings &s = m_settings;
    // The rules a config file shares with the merged flags are config::validate's (core/config/validation.h).
    const auto refuse = [](const char *key, const std::string &problem) {
        return makeError(ErrorCode::InvalidInput, std::string(key) + ": " + problem);
    };
    if (auto problem = config::rules::numProcesses(s.numProcesses, s.numMachines))
        return refuse("num_processes", *problem);
    if (auto problem = config::rules::machineRank(s.machineRank, s.numMachines))
        return refuse("machine_rank", *problem);
    // With c10d rendezvous the machines meet at --rdzv_endpoint instead.
    if (auto problem =
            config::rules::mainProcessIp(!s.mainProcessIp.empty() || s.machineRankAtRendezvous(), s.numMachines))
        return refuse("main_process_ip", *problem);
    if (s.numMachines > 1 && s.mainProcessPortExplicit && s.mainProcessPort == 0)
        return makeError(ErrorCode::InvalidInput, "main_process_port 0 (a free port) works on one machine only; "
                                                  "give every machine the same main_process_port");
    if (typed("multi_gpu") && s.numProcesses < 2)
        return makeError(ErrorCode::InvalidInput,
                         "--multi_gpu needs --num_processes 2 or more, got " + std::to_string(s.numProcesses));
    if (m_multiGpu && typed("multi_gpu") && s.gpuIds != "all" && s.numMachines == 1 &&
        std::count(s.gpuIds.begin(), s.gpuIds.end(), ',') < 1)
        return makeError(ErrorCode::InvalidInput, "--multi_gpu needs at least 2 gpu ids, got gpu_ids " + s.gpuIds);
    if (s.useFsdp) {
        const bool ramEfficient = parseBool(s.args["fsdp_cpu_ram_efficient_loading"].text);
        const bool sync = parseBool(s.args["fsdp_sync_module_states"].text);
        if (ramEfficient && !sync)
            return makeError(ErrorCode::InvalidInput,
                             "fsdp_cpu_ram_efficient_loading true needs fsdp_sync_module_states true");
    }
    if (s.useParallelismConfig)
        if (auto problem = config::rules::parallelismConfig(s.useFsdp, s.args["fsdp_version"].text == "2" ? 2 : 1))
            return refuse("parallelism_config", *problem);
    return {};
}

Result<LaunchSettings> Merger::run()
{
    m_settings.program = m_request.program;
    m_settings.workingDirectory = m_request.workingDirectory;
    if (auto ok = decideMode(); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = fillBlockArgs(); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = applyScalars(); !ok)
        return tl::unexpected(ok.error());
    if (!m_config && !m_modeFlagTyped && m_host.acceleratorCount > 1 && m_settings.numProcesses > 1)
        m_multiGpu = true;
    if (m_host.torchVersion)
        m_settings.torchVersion = *m_host.torchVersion;
    else if (usesRankVariables(m_settings) || m_multiGpu || m_settings.useFsdp || m_settings.useDeepSpeed)
        m_settings.torchVersion = detectTorchVersion(m_request.program, m_request.environment);
    noteQuirks();
    decideThreads();
    if (auto ok = validate(); !ok)
        return tl::unexpected(ok.error());

    LaunchSettings &s = m_settings;
    // Accelerate picks the launcher by --cpu alone; a config's use_cpu only reaches ACCELERATE_USE_CPU.
    const bool cpu = typed("cpu");
    if (s.useDeepSpeed && !cpu) {
        s.launcher = LauncherKind::DeepSpeed;
        s.distributedType = "DEEPSPEED";
        if (s.numMachines > 1) {
            const std::string runner = s.args.count("deepspeed_multinode_launcher")
                                           ? s.args["deepspeed_multinode_launcher"].text
                                           : std::string("pdsh");
            if (runner != "standard")
                s.notes.push_back("deepspeed_multinode_launcher " + runner +
                                  " is not used: accel launch starts this machine's ranks itself (as 'standard')");
        }
    } else if ((s.useFsdp || s.useMegatron || m_multiGpu) && !cpu) {
        s.launcher = LauncherKind::Torchrun;
        if (s.useFsdp)
            s.distributedType = "FSDP";
        else if (s.useMegatron)
            s.distributedType = "MEGATRON_LM";
        else if (s.distributedType.rfind("MULTI_", 0) != 0 || s.distributedType == "MULTI_CPU")
            s.distributedType = "MULTI_GPU";
    } else {
        s.launcher = LauncherKind::Simple;
        s.useDeepSpeed = s.useFsdp = s.useMegatron = s.useParallelismConfig = false;
        s.distributedType = s.numProcesses > 1 ? "MULTI_CPU" : "NO";
        if (s.numProcesses > 1) {
            const bool mpi = s.args.count("mpirun_hostfile") && !s.args["mpirun_hostfile"].text.empty();
            s.notes.push_back(std::string(mpi ? "the config's mpirun_hostfile is not used (--mpirun_hostfile FILE "
                                                "launches on its hosts over SSH): "
                                              : "") +
                              "accelerate launch would start 1 process here and leave the other ranks to "
                              "mpirun/SLURM; accel launch starts all " +
                              std::to_string(s.processesPerNode()) +
                              " local ranks with torchrun-style RANK/WORLD_SIZE");
        }
    }
    // With --deepspeed_hostfile the launch goes to its hosts (cmd_hosts_launch.cpp) and never gets here.
    for (const char *filter : {"deepspeed_inclusion_filter", "deepspeed_exclusion_filter"})
        if (typed(filter))
            s.notes.push_back(std::string(filter) +
                              " is not used: it filters the hosts of --deepspeed_hostfile, and none is given");
    s.deviceMaskVariable = deviceMaskVariableFor(s.distributedType);
    if (!s.useDeepSpeed)
        s.deepspeedFieldsFromConfig.clear();
#ifdef ACCEL_LAUNCHER_HAVE_CONFIG
    // A job's config keys that never reach its ranks: acted on, refused or noted (docs/native-keys.md).
    if (m_config && s.program.kind == ProgramSpec::Kind::Job) {
        if (auto ok = checkNativeJobConfig(*m_config, s); !ok)
            return tl::unexpected(ok.error());
    }
#endif
    return s;
}

} // namespace

std::string configFileToLoad(const LaunchRequest &request, const std::string &defaultPath, bool defaultExists)
{
    if (auto it = request.flags.find("config_file"); it != request.flags.end())
        return it->second;
    if (defaultExists && !request.flags.count("cpu"))
        return defaultPath;
    return {};
}

Result<LaunchSettings> mergeLaunchSettings(const LaunchRequest &request, const std::optional<ConfigView> &config,
                                           const HostFacts &host)
{
    return Merger(request, config, host).run();
}

} // namespace accel::launcher
