// Environment parity: for each launch mode, the variables a rank gets are those `accelerate launch`
// (and torchrun, where it is involved) would give it (facts 3.3, 3.4), plus ACCEL_RUN_DIR and
// ACCEL_METRICS_FILE.
#include "launcher/envbuilder.h"
#include "launcher/launchmerge.h"

#include <QtTest>

#include <set>

using namespace accel::launcher;

namespace {

ArgValue cfg(const std::string &text, bool isBool = false)
{
    ArgValue value;
    value.text = text;
    value.origin = Origin::Config;
    value.isBool = isBool;
    return value;
}

ConfigView config(const std::string &type, int processes)
{
    ConfigView view;
    view.path = "test.yaml";
    view.top["distributed_type"] = cfg(type);
    view.top["num_processes"] = cfg(std::to_string(processes));
    view.top["num_machines"] = cfg("1");
    view.top["machine_rank"] = cfg("0");
    view.top["mixed_precision"] = cfg("no");
    view.top["use_cpu"] = cfg("false", true);
    view.top["gpu_ids"] = cfg("all");
    return view;
}

const EnvMap kBase = {{"PATH", "/usr/bin"}, {"HOME", "/home/u"}};

LaunchSettings merge(std::map<std::string, std::string> flags, const std::optional<ConfigView> &view, int gpus = 0)
{
    LaunchRequest request;
    request.flags = std::move(flags);
    request.program.target = "train.py";
    request.environment = kBase;
    request.workingDirectory = "/work/proj";
    HostFacts host;
    host.physicalCores = 8;
    host.acceleratorCount = gpus;
    host.torchVersion = "2.12.1";
    auto settings = mergeLaunchSettings(request, view, host);
    if (!settings)
        qWarning("merge failed: %s", settings.error().toString().c_str());
    LaunchSettings result = settings ? *settings : LaunchSettings{};
    result.runDirectory = "/runs/r1";
    return result;
}

EnvMap added(const LaunchSettings &settings, int localRank = 0, int restart = 0)
{
    return environmentDifference(kBase, buildRankEnvironment(settings, kBase, {localRank, restart}));
}

std::string get(const EnvMap &env, const std::string &name)
{
    auto it = env.find(name);
    return it == env.end() ? std::string("<unset>") : it->second;
}

#define CHECK_ENV(env, name, expected) QCOMPARE(QString::fromStdString(get(env, name)), QStringLiteral(expected))

} // namespace

class tst_EnvBuilder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void simpleSingleProcess()
    {
        const LaunchSettings settings = merge({}, config("NO", 1));
        QCOMPARE(settings.launcher, LauncherKind::Simple);
        const EnvMap env = added(settings);
        // Exactly Accelerate's simple-launcher block plus ours: no rank or rendezvous variables.
        std::set<std::string> names;
        for (const auto &entry : env)
            names.insert(entry.first);
        const std::set<std::string> expected = {"ACCELERATE_DYNAMO_BACKEND",
                                                "ACCELERATE_DYNAMO_MODE",
                                                "ACCELERATE_DYNAMO_USE_DYNAMIC",
                                                "ACCELERATE_DYNAMO_USE_FULLGRAPH",
                                                "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION",
                                                "ACCELERATE_MIXED_PRECISION",
                                                "ACCELERATE_USE_CPU",
                                                "OMP_NUM_THREADS",
                                                "ACCEL_RUN_DIR",
                                                "ACCEL_METRICS_FILE"};
        QCOMPARE(names, expected);
        CHECK_ENV(env, "ACCELERATE_USE_CPU", "False");
        CHECK_ENV(env, "ACCELERATE_DYNAMO_BACKEND", "NO");
        CHECK_ENV(env, "ACCELERATE_DYNAMO_USE_FULLGRAPH", "False");
        CHECK_ENV(env, "ACCEL_METRICS_FILE", "/runs/r1/metrics/rank0.jsonl");
        CHECK_ENV(env, "OMP_NUM_THREADS", "1");
        const std::vector<std::string> command = buildRankCommand(settings, kBase);
        QCOMPARE(command, (std::vector<std::string>{"python3", "-u", "train.py"}));
    }

    void multiCpuStartsEveryRank()
    {
        const LaunchSettings settings = merge({}, config("MULTI_CPU", 4));
        QCOMPARE(settings.launcher, LauncherKind::Simple);
        QCOMPARE(settings.processesPerNode(), 4);
        QVERIFY(!settings.notes.empty()); // accelerate launch would start one process
        const EnvMap env = added(settings, 3);
        CHECK_ENV(env, "MASTER_ADDR", "127.0.0.1");
        CHECK_ENV(env, "MASTER_PORT", "29500");
        CHECK_ENV(env, "ACCELERATE_USE_CPU", "False");
        CHECK_ENV(env, "RANK", "3");
        CHECK_ENV(env, "LOCAL_RANK", "3");
        CHECK_ENV(env, "WORLD_SIZE", "4");
        CHECK_ENV(env, "LOCAL_WORLD_SIZE", "4");
        CHECK_ENV(env, "TORCHELASTIC_USE_AGENT_STORE", "False");
        CHECK_ENV(env, "ACCEL_METRICS_FILE", "/runs/r1/metrics/rank3.jsonl");
    }

    void cpuFlagThreads()
    {
        // --cpu with OMP_NUM_THREADS unset: physical cores / local processes (8 / 2).
        const LaunchSettings settings = merge({{"cpu", "true"}, {"num_processes", "2"}}, std::nullopt);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "ACCELERATE_USE_CPU", "True");
        CHECK_ENV(env, "OMP_NUM_THREADS", "4");
        const LaunchSettings typed =
            merge({{"cpu", "true"}, {"num_processes", "2"}, {"num_cpu_threads_per_process", "3"}}, std::nullopt);
        CHECK_ENV(added(typed), "OMP_NUM_THREADS", "3");
    }

    void multiGpu()
    {
        ConfigView view = config("MULTI_GPU", 2);
        view.top["gpu_ids"] = cfg("0,1");
        view.top["mixed_precision"] = cfg("bf16");
        const LaunchSettings settings = merge({}, view, 2);
        QCOMPARE(settings.launcher, LauncherKind::Torchrun);
        const EnvMap env = added(settings, 1, 2);
        CHECK_ENV(env, "CUDA_VISIBLE_DEVICES", "0,1");
        CHECK_ENV(env, "ACCELERATE_MIXED_PRECISION", "bf16");
        CHECK_ENV(env, "ACCELERATE_USE_CPU", "<unset>");
        CHECK_ENV(env, "RANK", "1");
        CHECK_ENV(env, "GROUP_RANK", "0");
        CHECK_ENV(env, "GROUP_WORLD_SIZE", "1");
        CHECK_ENV(env, "ROLE_NAME", "default");
        CHECK_ENV(env, "ROLE_RANK", "1");
        CHECK_ENV(env, "ROLE_WORLD_SIZE", "2");
        CHECK_ENV(env, "TORCHELASTIC_RESTART_COUNT", "2");
        CHECK_ENV(env, "TORCHELASTIC_MAX_RESTARTS", "0");
        CHECK_ENV(env, "TORCHELASTIC_RUN_ID", "none");
        CHECK_ENV(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
        CHECK_ENV(env, "ACCELERATE_DYNAMO_BACKEND", "NO");
        CHECK_ENV(env, "OMP_NUM_THREADS", "1");
        CHECK_ENV(env, "ACCELERATE_USE_FSDP", "<unset>");
        // Flag overrides the config's top-level scalar.
        const LaunchSettings typed = merge({{"gpu_ids", "1,0"}, {"mixed_precision", "fp16"}}, view, 2);
        CHECK_ENV(added(typed), "CUDA_VISIBLE_DEVICES", "1,0");
        CHECK_ENV(added(typed), "ACCELERATE_MIXED_PRECISION", "fp16");
    }

    void fsdp1()
    {
        ConfigView view = config("FSDP", 2);
        ArgMap &fsdp = view.blocks["fsdp_config"];
        fsdp["fsdp_version"] = cfg("1");
        fsdp["fsdp_reshard_after_forward"] = cfg("SHARD_GRAD_OP");
        fsdp["fsdp_offload_params"] = cfg("true", true);
        fsdp["fsdp_auto_wrap_policy"] = cfg("TRANSFORMER_BASED_WRAP");
        fsdp["fsdp_transformer_layer_cls_to_wrap"] = cfg("GPT2Block");
        fsdp["fsdp_state_dict_type"] = cfg("SHARDED_STATE_DICT");
        fsdp["backward_prefetch"] = cfg("BACKWARD_PRE"); // prefix added when missing
        const LaunchSettings settings = merge({}, view, 2);
        QCOMPARE(settings.launcher, LauncherKind::Torchrun);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "ACCELERATE_USE_FSDP", "true");
        CHECK_ENV(env, "FSDP_VERSION", "1");
        // Accelerate's quirk, kept: the strategy stored in reshard_after_forward loses to FULL_SHARD.
        CHECK_ENV(env, "FSDP_SHARDING_STRATEGY", "FULL_SHARD");
        CHECK_ENV(env, "FSDP_RESHARD_AFTER_FORWARD", "shard_grad_op");
        CHECK_ENV(env, "FSDP_OFFLOAD_PARAMS", "true");
        CHECK_ENV(env, "FSDP_MIN_NUM_PARAMS", "100000000");
        CHECK_ENV(env, "FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP");
        CHECK_ENV(env, "FSDP_TRANSFORMER_CLS_TO_WRAP", "GPT2Block");
        CHECK_ENV(env, "FSDP_BACKWARD_PREFETCH", "BACKWARD_PRE");
        CHECK_ENV(env, "FSDP_STATE_DICT_TYPE", "SHARDED_STATE_DICT");
        CHECK_ENV(env, "FSDP_FORWARD_PREFETCH", "false");
        CHECK_ENV(env, "FSDP_USE_ORIG_PARAMS", "true");
        CHECK_ENV(env, "FSDP_CPU_RAM_EFFICIENT_LOADING", "true");
        CHECK_ENV(env, "FSDP_SYNC_MODULE_STATES", "true");
        CHECK_ENV(env, "FSDP_ACTIVATION_CHECKPOINTING", "false");
        CHECK_ENV(env, "FSDP_IGNORED_MODULES", "<unset>");
        // A typed flag beats the config block; the config block beats flag defaults.
        const LaunchSettings typed =
            merge({{"fsdp_sharding_strategy", "SHARD_GRAD_OP"}, {"fsdp_offload_params", "false"}}, view, 2);
        CHECK_ENV(added(typed), "FSDP_SHARDING_STRATEGY", "SHARD_GRAD_OP");
        CHECK_ENV(added(typed), "FSDP_OFFLOAD_PARAMS", "false");
    }

    void fsdp2()
    {
        ConfigView view = config("FSDP", 2);
        ArgMap &fsdp = view.blocks["fsdp_config"];
        fsdp["fsdp_version"] = cfg("2");
        fsdp["fsdp_reshard_after_forward"] = cfg("false", true);
        fsdp["fsdp_activation_checkpointing"] = cfg("true", true);
        fsdp["fsdp_cpu_ram_efficient_loading"] = cfg("false", true);
        view.blocks["parallelism_config"]["parallelism_config_dp_shard_size"] = cfg("2");
        const LaunchSettings settings = merge({}, view, 2);
        QVERIFY(settings.useParallelismConfig);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "FSDP_VERSION", "2");
        CHECK_ENV(env, "FSDP_RESHARD_AFTER_FORWARD", "false");
        CHECK_ENV(env, "FSDP_ACTIVATION_CHECKPOINTING", "true");
        CHECK_ENV(env, "FSDP_CPU_RAM_EFFICIENT_LOADING", "false");
        CHECK_ENV(env, "ACCELERATE_USE_PARALLELISM_CONFIG", "true");
        CHECK_ENV(env, "PARALLELISM_CONFIG_DP_SHARD_SIZE", "2");
        CHECK_ENV(env, "PARALLELISM_CONFIG_TP_SIZE", "1");
        CHECK_ENV(env, "PARALLELISM_CONFIG_CP_BACKEND", "torch");
        CHECK_ENV(env, "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "false");
        // Regression: the context- and sequence-parallel details were exported unconditionally;
        // Accelerate exports them only when cp_size / sp_size is above 1.
        CHECK_ENV(env, "PARALLELISM_CONFIG_CP_COMM_STRATEGY", "<unset>");
        CHECK_ENV(env, "PARALLELISM_CONFIG_SP_SEQ_LENGTH_IS_VARIABLE", "<unset>");
        CHECK_ENV(env, "PARALLELISM_CONFIG_SP_SEQ_LENGTH", "<unset>");
        view.blocks["parallelism_config"]["parallelism_config_sp_size"] = cfg("2");
        view.blocks["parallelism_config"]["parallelism_config_cp_size"] = cfg("2");
        const EnvMap sp = added(merge({}, view, 2));
        CHECK_ENV(sp, "PARALLELISM_CONFIG_CP_COMM_STRATEGY", "allgather");
        CHECK_ENV(sp, "PARALLELISM_CONFIG_SP_SEQ_LENGTH_IS_VARIABLE", "True");
        CHECK_ENV(sp, "PARALLELISM_CONFIG_SP_SEQ_LENGTH", "None");
        CHECK_ENV(sp, "PARALLELISM_CONFIG_SP_ATTN_IMPLEMENTATION", "sdpa");
        // Regression: "--parallelism_config_sp_seq_length_is_variable false" was silently turned into
        // False; accelerate launch reads it with bool(), so it is True, and a note now says so.
        const LaunchSettings typed = merge({{"parallelism_config_sp_seq_length_is_variable", "false"}}, view, 2);
        CHECK_ENV(added(typed), "PARALLELISM_CONFIG_SP_SEQ_LENGTH_IS_VARIABLE", "True");
        bool noted = false;
        for (const std::string &note : typed.notes)
            noted = noted || note.find("--parallelism_config_sp_seq_length_is_variable false is exported as True") == 0;
        QVERIFY(noted);
    }

    void deepspeedWithoutFile()
    {
        ConfigView view = config("DEEPSPEED", 2);
        view.top["mixed_precision"] = cfg("bf16");
        ArgMap &ds = view.blocks["deepspeed_config"];
        ds["zero_stage"] = cfg("3");
        ds["gradient_accumulation_steps"] = cfg("4");
        ds["gradient_clipping"] = cfg("1.0");
        ds["offload_optimizer_device"] = cfg("cpu");
        ds["offload_param_device"] = cfg("none");
        ds["offload_param_nvme_path"] = cfg("/nvme");
        ds["zero3_init_flag"] = cfg("true", true);
        ds["zero3_save_16bit_model"] = cfg("false", true);
        const LaunchSettings settings = merge({}, view, 2);
        QCOMPARE(settings.launcher, LauncherKind::DeepSpeed);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "ACCELERATE_USE_DEEPSPEED", "true");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_ZERO_STAGE", "3");
        CHECK_ENV(env, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4");
        CHECK_ENV(env, "ACCELERATE_GRADIENT_CLIPPING", "1.0");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "cpu");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "none");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_ZERO3_INIT", "true");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "false");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_CONFIG_FILE", "<unset>");
        CHECK_ENV(env, "ACCELERATE_MIXED_PRECISION", "bf16");
        CHECK_ENV(env, "ACCELERATE_CONFIG_DS_FIELDS",
                  "gradient_accumulation_steps,gradient_clipping,offload_optimizer_device,offload_param_device,"
                  "offload_param_nvme_path,zero3_init_flag,zero3_save_16bit_model,zero_stage,mixed_precision");
        // No dynamo variables and a CWD-extended PYTHONPATH (facts 3.3).
        CHECK_ENV(env, "ACCELERATE_DYNAMO_BACKEND", "<unset>");
        CHECK_ENV(env, "PYTHONPATH", "/work/proj");
        // Accelerate does not set OMP_NUM_THREADS for DeepSpeed; torchrun sets 1 for >1 local process.
        CHECK_ENV(env, "OMP_NUM_THREADS", "1");
        CHECK_ENV(env, "RANK", "0");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH", "<unset>");
        EnvMap base = kBase;
        base["PYTHONPATH"] = "/opt/lib::/x";
        CHECK_ENV(buildRankEnvironment(settings, base, {}), "PYTHONPATH", "/opt/lib:/x:/work/proj");

        // The trackers' start-up hook (docs/trackers.md) comes last, after DeepSpeed's entry too;
        // never for accel-worker jobs, never without a run directory.
        LaunchSettings hooked = settings;
        hooked.trackerStartupHook = true;
        hooked.runDirectory = "/runs/r1";
        CHECK_ENV(buildRankEnvironment(hooked, base, {}), "PYTHONPATH", "/opt/lib:/x:/work/proj:/runs/r1/python");
        hooked.program.kind = ProgramSpec::Kind::Job;
        CHECK_ENV(buildRankEnvironment(hooked, base, {}), "PYTHONPATH", "/opt/lib:/x:/work/proj");
        hooked.program.kind = ProgramSpec::Kind::PythonScript;
        hooked.runDirectory.clear();
        CHECK_ENV(buildRankEnvironment(hooked, base, {}), "PYTHONPATH", "/opt/lib:/x:/work/proj");
    }

    void deepspeedWithFile()
    {
        ConfigView view = config("DEEPSPEED", 2);
        view.top.erase("mixed_precision");
        view.blocks["deepspeed_config"]["deepspeed_config_file"] = cfg("/cfg/ds.json");
        view.blocks["deepspeed_config"]["zero3_init_flag"] = cfg("true", true);
        const LaunchSettings settings = merge({}, view, 2);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_CONFIG_FILE", "/cfg/ds.json");
        CHECK_ENV(env, "ACCELERATE_CONFIG_DS_FIELDS", "deepspeed_config_file,zero3_init_flag");
        CHECK_ENV(env, "ACCELERATE_MIXED_PRECISION", "no");
        CHECK_ENV(env, "ACCELERATE_DEEPSPEED_ZERO_STAGE", "<unset>");
    }

    void fp8TransformerEngine()
    {
        ConfigView view = config("MULTI_GPU", 2);
        view.top["mixed_precision"] = cfg("fp8");
        ArgMap &fp8 = view.blocks["fp8_config"];
        fp8["backend"] = cfg("TE");
        fp8["fp8_format"] = cfg("E4M3");
        fp8["margin"] = cfg("2");
        fp8["interval"] = cfg("1");
        fp8["amax_history_length"] = cfg("16");
        fp8["amax_compute_algorithm"] = cfg("max");
        fp8["use_autocast_during_eval"] = cfg("false", true);
        ArgValue override = cfg("true,false,false");
        override.list = {"true", "false", "false"};
        fp8["override_linear_precision"] = override;
        const LaunchSettings settings = merge({}, view, 2);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "ACCELERATE_MIXED_PRECISION", "fp8");
        CHECK_ENV(env, "ACCELERATE_FP8_BACKEND", "TE");
        CHECK_ENV(env, "ACCELERATE_FP8_FORMAT", "E4M3");
        CHECK_ENV(env, "ACCELERATE_FP8_MARGIN", "2");
        CHECK_ENV(env, "ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL", "False");
        CHECK_ENV(env, "ACCELERATE_FP8_OVERRIDE_FPROP", "True");
        CHECK_ENV(env, "ACCELERATE_FP8_OVERRIDE_DGRAD", "False");
        CHECK_ENV(env, "ACCELERATE_FP8_OVERRIDE_WGRAD", "False");
        // The questionnaire's names are exported as accelerate launch exports them (under names no
        // recipe reads), the recipe's names keep their flag defaults, and a note says so.
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_HISTORY_LENGTH", "16");
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_COMPUTE_ALGORITHM", "max");
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_HISTORY_LEN", "1024");
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_COMPUTE_ALGO", "most_recent");
        QCOMPARE(settings.notes.size(), size_t(2));
        QVERIFY(settings.notes[0].find("has no effect: accelerate launch exports it as") != std::string::npos);
        // Every fp8_ argument is exported, including other backends' defaults.
        CHECK_ENV(env, "ACCELERATE_FP8_OPT_LEVEL", "O2");
        // Regression: the str_to_bool flags' defaults were exported as True; argparse parses the
        // default text "true" with str_to_bool, so accelerate launch exports 1.
        CHECK_ENV(env, "ACCELERATE_FP8_PAD_INNER_DIM", "1");
        CHECK_ENV(env, "ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER", "1");
    }

    // The recipe's own spellings in fp8_config reach the variables the recipes read.
    void fp8TemplateKeys()
    {
        ConfigView view = config("MULTI_GPU", 2);
        view.top["mixed_precision"] = cfg("fp8");
        ArgMap &fp8 = view.blocks["fp8_config"];
        fp8["backend"] = cfg("te");
        fp8["amax_history_len"] = cfg("32");
        fp8["amax_compute_algo"] = cfg("max");
        fp8["opt_level"] = cfg("O1");
        fp8["override_linear_precision"] = cfg("(false, false, true)");
        fp8["pad_inner_dim"] = cfg("false", true);
        const LaunchSettings settings = merge({}, view, 2);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_HISTORY_LEN", "32");
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_COMPUTE_ALGO", "max");
        CHECK_ENV(env, "ACCELERATE_FP8_OPT_LEVEL", "O1");
        CHECK_ENV(env, "ACCELERATE_FP8_BACKEND", "TE");
        CHECK_ENV(env, "ACCELERATE_FP8_PAD_INNER_DIM", "False"); // a config boolean: Python's str()
        CHECK_ENV(env, "ACCELERATE_FP8_OVERRIDE_FPROP", "False");
        CHECK_ENV(env, "ACCELERATE_FP8_OVERRIDE_WGRAD", "True");
        QCOMPARE(env.count("ACCELERATE_FP8_AMAX_HISTORY_LENGTH"), size_t(0));
        bool noted = false;
        for (const std::string &note : settings.notes)
            noted = noted ||
                    note.find("fp8_config.override_linear_precision: (false, false, true) is exported as three") == 0;
        QVERIFY(noted);
        // A bool stands for all three.
        fp8["override_linear_precision"] = cfg("true", true);
        CHECK_ENV(added(merge({}, view, 2)), "ACCELERATE_FP8_OVERRIDE_DGRAD", "True");
    }

    void fp8AoFromFlags()
    {
        const LaunchSettings settings = merge({{"mixed_precision", "fp8"},
                                               {"fp8_backend", "ao"},
                                               {"num_processes", "2"},
                                               {"multi_gpu", "true"},
                                               {"fp8_pad_inner_dim", "false"}},
                                              std::nullopt, 2);
        const EnvMap env = added(settings);
        CHECK_ENV(env, "ACCELERATE_FP8_BACKEND", "AO");                      // upper-cased (facts 3.1)
        CHECK_ENV(env, "ACCELERATE_FP8_PAD_INNER_DIM", "0");                 // typed booleans: str_to_bool's 0/1
        CHECK_ENV(env, "ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER", "1"); // default "true", parsed the same way
        CHECK_ENV(env, "ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL", "False");
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_HISTORY_LEN", "1024");
        CHECK_ENV(env, "ACCELERATE_FP8_AMAX_COMPUTE_ALGO", "most_recent");
        CHECK_ENV(env, "ACCELERATE_FP8_OVERRIDE_FPROP", "False");
        QVERIFY(!settings.notes.empty());
    }

    void fp8MsAmp()
    {
        ConfigView view = config("MULTI_GPU", 2);
        view.top["mixed_precision"] = cfg("fp8");
        view.blocks["fp8_config"]["backend"] = cfg("MSAMP");
        view.blocks["fp8_config"]["optimization_level"] = cfg("O1");
        const EnvMap env = added(merge({}, view, 2));
        CHECK_ENV(env, "ACCELERATE_FP8_BACKEND", "MSAMP");
        CHECK_ENV(env, "ACCELERATE_FP8_OPTIMIZATION_LEVEL", "O1");
        CHECK_ENV(env, "ACCELERATE_FP8_OPT_LEVEL", "O2"); // the questionnaire's key never reaches it
        // Not fp8: no FP8 block at all.
        view.top["mixed_precision"] = cfg("bf16");
        CHECK_ENV(added(merge({}, view, 2)), "ACCELERATE_FP8_BACKEND", "<unset>");
    }

    void multiNodeRanks()
    {
        ConfigView view = config("MULTI_GPU", 8);
        view.top["num_machines"] = cfg("2");
        view.top["machine_rank"] = cfg("1");
        view.top["main_process_ip"] = cfg("10.0.0.1");
        view.top["main_process_port"] = cfg("29400");
        const LaunchSettings settings = merge({}, view, 4);
        QCOMPARE(settings.processesPerNode(), 4);
        const EnvMap env = added(settings, 2);
        CHECK_ENV(env, "RANK", "6");
        CHECK_ENV(env, "LOCAL_RANK", "2");
        CHECK_ENV(env, "WORLD_SIZE", "8");
        CHECK_ENV(env, "LOCAL_WORLD_SIZE", "4");
        CHECK_ENV(env, "GROUP_RANK", "1");
        CHECK_ENV(env, "GROUP_WORLD_SIZE", "2");
        CHECK_ENV(env, "MASTER_ADDR", "10.0.0.1");
        CHECK_ENV(env, "MASTER_PORT", "29400");
        CHECK_ENV(env, "ACCEL_METRICS_FILE", "/runs/r1/metrics/rank6.jsonl");
    }

    void megatronAndDynamo()
    {
        ConfigView view = config("MEGATRON_LM", 2);
        view.blocks["megatron_lm_config"]["megatron_lm_tp_degree"] = cfg("2");
        view.blocks["dynamo_config"]["dynamo_backend"] = cfg("INDUCTOR");
        view.blocks["dynamo_config"]["dynamo_use_fullgraph"] = cfg("true", true);
        view.top["debug"] = cfg("true", true);
        const EnvMap env = added(merge({}, view, 2));
        CHECK_ENV(env, "ACCELERATE_USE_MEGATRON_LM", "true");
        CHECK_ENV(env, "MEGATRON_LM_TP_DEGREE", "2");
        CHECK_ENV(env, "MEGATRON_LM_PP_DEGREE", "1");
        CHECK_ENV(env, "MEGATRON_LM_GRADIENT_CLIPPING", "1.0");
        // Regression: the newer Megatron-LM flags were unknown and their defaults not exported.
        CHECK_ENV(env, "MEGATRON_LM_USE_CUSTOM_FSDP", "False");
        CHECK_ENV(env, "MEGATRON_LM_NO_LOAD_OPTIM", "False");
        CHECK_ENV(env, "MEGATRON_LM_OVERLAP_CPU_OPTIMIZER_D2H_H2D", "False");
        CHECK_ENV(env, "MEGATRON_LM_ATTENTION_BACKEND", "<unset>");
        const EnvMap typed = added(merge({{"megatron_lm_attention_backend", "flash"},
                                          {"megatron_lm_hidden_dropout", "0"},
                                          {"megatron_lm_recompute_num_layers", "04"},
                                          {"megatron_lm_eod_mask_loss", "no"}},
                                         view, 2));
        CHECK_ENV(typed, "MEGATRON_LM_ATTENTION_BACKEND", "flash");
        CHECK_ENV(typed, "MEGATRON_LM_HIDDEN_DROPOUT", "0.0");     // float("0")
        CHECK_ENV(typed, "MEGATRON_LM_RECOMPUTE_NUM_LAYERS", "4"); // int("04")
        CHECK_ENV(typed, "MEGATRON_LM_EOD_MASK_LOSS", "True");     // bool("no")
        CHECK_ENV(env, "ACCELERATE_DYNAMO_BACKEND", "INDUCTOR");
        CHECK_ENV(env, "ACCELERATE_DYNAMO_USE_FULLGRAPH", "True");
        CHECK_ENV(env, "ACCELERATE_DEBUG_MODE", "true");
    }

    // Regression: OMP_NUM_THREADS was cores / processes with a config file plus --cpu; Accelerate
    // then looks at the config's use_cpu (false) and keeps 1.
    void cpuFlagWithConfigKeepsOneThread()
    {
        const LaunchSettings settings = merge({{"cpu", "true"}}, config("MULTI_CPU", 2));
        const EnvMap env = added(settings);
        CHECK_ENV(env, "OMP_NUM_THREADS", "1");
        CHECK_ENV(env, "ACCELERATE_USE_CPU", "True");
        CHECK_ENV(env, "KMP_AFFINITY", "granularity=fine,compact,1,0");
        CHECK_ENV(env, "KMP_BLOCKTIME", "1");
        ConfigView cpuConfig = config("MULTI_CPU", 2);
        cpuConfig.top["use_cpu"] = cfg("true", true);
        CHECK_ENV(added(merge({{"cpu", "true"}}, cpuConfig)), "OMP_NUM_THREADS", "4");
    }

    // Regression: a config's use_cpu: true turned --use_fsdp / --use_megatron_lm / --use_deepspeed into
    // a simple launch; Accelerate picks the launcher by --cpu alone.
    void configUseCpuKeepsTypedMode()
    {
        ConfigView cpuConfig = config("MULTI_CPU", 2);
        cpuConfig.top["use_cpu"] = cfg("true", true);
        const LaunchSettings fsdp = merge({{"use_fsdp", "true"}}, cpuConfig);
        QCOMPARE(fsdp.launcher, LauncherKind::Torchrun);
        CHECK_ENV(added(fsdp), "ACCELERATE_USE_FSDP", "true");
        QCOMPARE(merge({{"use_deepspeed", "true"}}, cpuConfig).launcher, LauncherKind::DeepSpeed);
        QCOMPARE(merge({{"use_fsdp", "true"}, {"cpu", "true"}}, std::nullopt).launcher, LauncherKind::Simple);
    }

    // torchrun names the NCCL error-handling variable after the torch version.
    void ncclErrorHandlingFollowsTorch()
    {
        LaunchSettings settings = merge({{"multi_gpu", "true"}, {"num_processes", "2"}}, std::nullopt, 2);
        CHECK_ENV(added(settings), "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
        CHECK_ENV(added(settings), "NCCL_ASYNC_ERROR_HANDLING", "<unset>");
        settings.torchVersion = "2.1.2";
        CHECK_ENV(added(settings), "NCCL_ASYNC_ERROR_HANDLING", "1");
        CHECK_ENV(added(settings), "TORCH_NCCL_ASYNC_ERROR_HANDLING", "<unset>");
        settings.torchVersion = "1.13.1";
        CHECK_ENV(added(settings), "NCCL_ASYNC_ERROR_HANDLING", "1");
        settings.torchVersion = "";
        CHECK_ENV(added(settings), "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
    }

    void commands()
    {
        LaunchSettings settings;
        settings.program.target = "pkg.train";
        settings.program.kind = ProgramSpec::Kind::PythonModule;
        settings.program.args = {"--lr", "1"};
        QCOMPARE(buildRankCommand(settings, {}),
                 (std::vector<std::string>{"python3", "-u", "-m", "pkg.train", "--lr", "1"}));
        QCOMPARE(buildRankCommand(settings, {{"PYTHON_EXEC", "/opt/py"}}).front(), std::string("/opt/py"));
        settings.program.kind = ProgramSpec::Kind::Executable;
        settings.program.target = "/bin/true";
        QCOMPARE(buildRankCommand(settings, {}), (std::vector<std::string>{"/bin/true", "--lr", "1"}));
        settings.program.kind = ProgramSpec::Kind::Job;
        settings.program.target = "/jobs/a.yaml";
        settings.program.workerProgram = "/bin/accel-worker";
        settings.program.args = {};
        QCOMPARE(buildRankCommand(settings, {}), (std::vector<std::string>{"/bin/accel-worker", "/jobs/a.yaml"}));
    }
};

QTEST_GUILESS_MAIN(tst_EnvBuilder)
#include "tst_envbuilder.moc"
