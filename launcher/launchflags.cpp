#include "launcher/launchflags.h"

#include "core/common/accelerateenv.h"
#include "core/common/distributeddefaults.h"
#include "core/common/fsdpvalues.h"
#include "core/common/text.h"
#include "core/config/configschema.h"

#include <memory>
#include <set>

namespace accel::launcher {

namespace {
using K = LaunchFlag::Kind;

// The allowed values of a config key, as the config schema declares them.
const std::vector<std::string> &schemaValues(const char *dottedKey)
{
    return config::schema::keyRule(dottedKey)->choices.values;
}

// `prefix` followed by the key's values, for a flag's help; the texts live as long as the table.
const char *helpWithValues(const char *prefix, const char *dottedKey)
{
    static std::vector<std::unique_ptr<std::string>> texts;
    texts.push_back(std::make_unique<std::string>(prefix + config::schema::joined(schemaValues(dottedKey))));
    return texts.back()->c_str();
}

// fp8_backend: Accelerate's launcher takes the lower-case names, and the upper-case ones of a config.
std::vector<std::string> fp8BackendChoices()
{
    std::vector<std::string> choices;
    for (const std::string &name : schemaValues("fp8_config.backend"))
        choices.push_back(text::lower(name));
    for (const std::string &name : schemaValues("fp8_config.backend"))
        choices.push_back(name);
    return choices;
}

std::vector<LaunchFlag> makeFlags()
{
    namespace schema = config::schema;
    const std::vector<std::string> &precisions = schema::mixedPrecisionNames();
    std::vector<std::string> dynamo = schema::valuesIn(schema::dynamoBackendTable(), schema::LaunchFlag);
    for (std::string &backend : dynamo)
        backend = text::lower(backend);
    static const std::string wrapPolicies = schema::joined(schema::fsdpAutoWrapPolicies());
    static const std::string prefetchModes = schema::joined(schema::fsdpBackwardPrefetchModes());
    static const std::string debugHelp = std::string("sets ") + accelerateenv::kDebugMode + "=true in every rank";
    return {
        // General
        {"config_file", K::Value, "FILE", nullptr, "cluster config file (default: Accelerate's default_config.yaml)",
         "general"},
        {"quiet", K::Switch, "", nullptr, "print no launcher summary on failure, only exit 1", "general", 'q'},
        {"debug", K::Switch, "", nullptr, debugHelp.c_str(), "general"},
        {"module", K::Switch, "", nullptr, "run SCRIPT as a Python module (python3 -u -m)", "general", 'm'},
        {"no_python", K::Switch, "", nullptr, "run SCRIPT directly, not through python3", "general"},
        {"job", K::Value, "JOB.yaml", nullptr, "run an accel-worker job instead of a script", "accel"},
        {"run_dir", K::Value, "DIR", nullptr, "run directory (default: <data>/accel-studio/runs/<run-id>)", "accel"},
        {"name", K::Value, "NAME", nullptr, "readable part of the run id (default: script or job name)", "accel"},
        {"dry_run", K::Switch, "", nullptr, "print each rank's command and environment; start nothing", "accel"},
        {"json", K::Switch, "", nullptr, "with --dry-run: machine-readable output (accel.launch-plan)", "accel"},
        {"detach", K::Switch, "", nullptr, "run the supervisor in the background; print the run id", "accel"},
        {"grace_period", K::Value, "SECONDS", "5", "after SIGTERM, seconds before ranks are killed", "accel"},
        {"no_mirror", K::Switch, "", nullptr, "do not copy rank output to the terminal", "accel"},
        {"tracker_dir", K::Value, "DIR", nullptr,
         "also read the TensorBoard, MLflow and trackio files under DIR into the run's metrics (repeatable; "
         "docs/trackers.md)",
         "accel", 0, true},
        {"no_tracker_discovery", K::Switch, "", nullptr,
         "do not look for the trackers the script writes (no start-up hook on the ranks' PYTHONPATH, no look at "
         "their open files)",
         "accel"},
        // Hardware
        {"cpu", K::Switch, "", nullptr, "force CPU training", "hardware"},
        {"multi_gpu", K::Switch, "", nullptr, "distributed GPU training (torchrun launcher)", "hardware"},
        {"tpu", K::Switch, "", nullptr, "TPU training (not supported by accel)", "hardware"},
        // Resources
        {"mixed_precision", K::Value, "MODE", nullptr, "mixed precision", "resources", 0, false, precisions},
        {"num_processes", K::Value, "N", nullptr, "total number of ranks across all machines", "resources"},
        {"num_machines", K::Value, "N", nullptr, "number of machines", "resources"},
        {"num_cpu_threads_per_process", K::Value, "N", nullptr, "OMP_NUM_THREADS of every rank", "resources"},
        {"enable_cpu_affinity", K::Switch, "", nullptr, "pin ranks to the CPUs near their GPU", "resources"},
        {"dynamo_backend", K::Value, "BACKEND", nullptr, "torch.compile backend", "resources", 0, false, dynamo},
        {"dynamo_mode", K::Value, "MODE", "default", "torch.compile mode", "resources", 0, false,
         schema::valuesIn(schema::dynamoModeTable(), schema::LaunchFlag)},
        {"dynamo_use_fullgraph", K::Switch, "", nullptr, "compile full graphs", "resources"},
        {"dynamo_use_dynamic", K::Switch, "", nullptr, "compile with dynamic shapes", "resources"},
        {"dynamo_use_regional_compilation", K::Switch, "", nullptr, "compile repeated blocks once", "resources"},
        // Paradigm
        {"use_deepspeed", K::Switch, "", nullptr, "DeepSpeed launcher", "paradigm"},
        {"use_fsdp", K::Switch, "", nullptr, "FSDP (torchrun launcher)", "paradigm"},
        {"use_parallelism_config", K::Switch, "", nullptr, "export the parallelism config (FSDP2 only)", "paradigm"},
        {"use_megatron_lm", K::Switch, "", nullptr, "Megatron-LM (torchrun launcher)", "paradigm"},
        // Distributed
        {"gpu_ids", K::Value, "IDS", nullptr, "comma list of GPU ids, or all", "distributed"},
        {"same_network", K::Switch, "", nullptr, "machines share a network", "distributed"},
        {"machine_rank", K::Value, "N", nullptr, "rank of this machine", "distributed"},
        {"main_process_ip", K::Value, "IP", nullptr, "address of machine 0", "distributed"},
        {"main_process_port", K::Value, "PORT", nullptr,
         "port of rank 0's TCPStore (0: a free port; default " ACCEL_STRINGIFY(ACCEL_MAIN_PROCESS_PORT) ")",
         "distributed"},
        {"tee", K::Value, "N", "0", "accepted for compatibility; rank output always goes to logs/", "distributed", 't'},
        {"log_dir", K::Value, "DIR", nullptr, "accepted for compatibility; logs go to the run directory",
         "distributed"},
        {"role", K::Value, "ROLE", "default", "ROLE_NAME of the ranks", "distributed"},
        {"rdzv_backend", K::Value, "NAME", "static",
         "static (every machine gives --machine_rank) or c10d (the machines started with the same command agree on "
         "machine ranks at --rdzv_endpoint); etcd is refused",
         "distributed"},
        {"rdzv_endpoint", K::Value, "HOST[:PORT]", nullptr,
         "where the c10d rendezvous meets (torchrun's; default main_process_ip:main_process_port, "
         "port " ACCEL_STRINGIFY(ACCEL_RENDEZVOUS_PORT) " when omitted); the machine with that address hosts it",
         "distributed"},
        {"rdzv_conf", K::Value, "CONF", "",
         "c10d options KEY=VALUE,...: join_timeout (600 s), read_timeout (60 s), is_host; other torchrun keys are "
         "noted or refused by name",
         "distributed"},
        {"max_restarts", K::Value, "N", "0",
         "restart the whole group up to N times after a failure (with c10d, the machines meet again before each)",
         "distributed"},
        {"monitor_interval", K::Value, "SECONDS", "0.1", "accepted for compatibility (accel reacts to exits at once)",
         "distributed"},
        // TPU (accepted, not supported)
        {"tpu_cluster", K::Switch, "", nullptr, "TPU pod (not supported)", "tpu"},
        {"no_tpu_cluster", K::Switch, "", nullptr, "not a TPU pod", "tpu"},
        {"tpu_use_sudo", K::Switch, "", nullptr, "TPU pod sudo (not supported)", "tpu"},
        {"vm", K::Value, "VM", nullptr, "TPU VM (not supported)", "tpu", 0, true},
        {"env", K::Value, "ENV", nullptr, "TPU environment (not supported)", "tpu", 0, true},
        {"main_training_function", K::Value, "NAME", nullptr, "TPU only (unused)", "tpu"},
        {"downcast_bf16", K::Switch, "", nullptr, "TPU only (unused)", "tpu"},
        // DeepSpeed
        {"deepspeed_config_file", K::Value, "FILE", nullptr, "DeepSpeed JSON config", "deepspeed"},
        {"zero_stage", K::Value, "N", nullptr, "ZeRO stage 0-3", "deepspeed"},
        {"offload_optimizer_device", K::Value, "DEVICE", nullptr, "none, cpu or nvme", "deepspeed"},
        {"offload_param_device", K::Value, "DEVICE", nullptr, "none, cpu or nvme", "deepspeed"},
        {"offload_optimizer_nvme_path", K::Value, "PATH", nullptr, "NVMe path for optimizer state", "deepspeed"},
        {"offload_param_nvme_path", K::Value, "PATH", nullptr, "NVMe path for parameters", "deepspeed"},
        {"gradient_accumulation_steps", K::Value, "N", nullptr, "gradient accumulation steps", "deepspeed"},
        {"gradient_clipping", K::Value, "X", nullptr, "gradient clipping", "deepspeed"},
        {"zero3_init_flag", K::BoolText, "BOOL", nullptr, "ZeRO-3 init", "deepspeed"},
        {"zero3_save_16bit_model", K::BoolText, "BOOL", nullptr, "save 16-bit model with ZeRO-3", "deepspeed"},
        {"deepspeed_hostfile", K::Value, "FILE", nullptr,
         "launch on the hosts of this 'HOST slots=N' file over SSH, one machine each in file order (as "
         "--hosts; the slots give --num_processes when it is not given)",
         "deepspeed"},
        {"deepspeed_exclusion_filter", K::Value, "FILTER", nullptr,
         "leave out hosts or slots of --deepspeed_hostfile: host1@host2:0,2", "deepspeed"},
        {"deepspeed_inclusion_filter", K::Value, "FILTER", nullptr,
         "keep only these hosts or slots of --deepspeed_hostfile: host1@host2:0,2", "deepspeed"},
        {"deepspeed_multinode_launcher", K::Value, "NAME", nullptr, "DeepSpeed multi-node launcher", "deepspeed"},
        {"deepspeed_moe_layer_cls_names", K::Value, "NAMES", nullptr, "MoE layer classes", "deepspeed"},
        // FSDP
        {"fsdp_version", K::Value, "N", "1", "FSDP version (1 or 2)", "fsdp", 0, false,
         config::schema::allowedValues("fsdp_config.fsdp_version")},
        {"fsdp_reshard_after_forward", K::Value, "VALUE", "true", "FSDP2: bool; FSDP1: sharding strategy", "fsdp"},
        {"fsdp_sharding_strategy", K::Value, "STRATEGY", fsdp::kFullShard, "FSDP1 sharding strategy", "fsdp"},
        {"fsdp_offload_params", K::BoolText, "BOOL", "false", "offload parameters to CPU", "fsdp"},
        {"fsdp_auto_wrap_policy", K::Value, "POLICY", nullptr, wrapPolicies.c_str(), "fsdp"},
        {"fsdp_transformer_layer_cls_to_wrap", K::Value, "NAMES", nullptr, "layer classes to wrap", "fsdp"},
        {"fsdp_min_num_params", K::Value, "N", fsdp::kDefaultMinNumParams, "size-based wrap threshold", "fsdp"},
        {"fsdp_backward_prefetch", K::Value, "MODE", nullptr, prefetchModes.c_str(), "fsdp"},
        {"fsdp_state_dict_type", K::Value, "TYPE", nullptr, "state dict type", "fsdp"},
        {"fsdp_forward_prefetch", K::BoolText, "BOOL", "false", "forward prefetch", "fsdp"},
        {"fsdp_use_orig_params", K::BoolText, "BOOL", "true", "use original parameters", "fsdp"},
        {"fsdp_cpu_ram_efficient_loading", K::BoolText, "BOOL", "true", "load weights on rank 0 only", "fsdp"},
        {"fsdp_sync_module_states", K::BoolText, "BOOL", "true", "broadcast module states", "fsdp"},
        {"fsdp_activation_checkpointing", K::BoolText, "BOOL", "false", "activation checkpointing", "fsdp"},
        {"fsdp_activation_checkpointing_offload", K::BoolText, "BOOL", "false",
         "offload checkpointed activations to CPU", "fsdp"},
        {"fsdp_ignored_modules", K::Value, "REGEX", nullptr, "modules FSDP ignores", "fsdp"},
        // Megatron-LM
        {"megatron_lm_tp_degree", K::Value, "N", "1", "tensor parallel degree", "megatron"},
        {"megatron_lm_use_custom_fsdp", K::PythonBool, "BOOL", "False",
         "Megatron custom FSDP (any text but empty means true, as in accelerate launch)", "megatron"},
        {"megatron_lm_no_load_optim", K::PythonBool, "BOOL", "False", "do not load optimizer state", "megatron"},
        {"megatron_lm_eod_mask_loss", K::PythonBool, "BOOL", "False", "mask the loss at end-of-document tokens",
         "megatron"},
        {"megatron_lm_overlap_cpu_optimizer_d2h_h2d", K::PythonBool, "BOOL", "False", "overlap CPU optimizer transfers",
         "megatron"},
        {"megatron_lm_no_save_optim", K::PythonBool, "BOOL", "False", "do not save optimizer state", "megatron"},
        {"megatron_lm_optimizer_cpu_offload", K::PythonBool, "BOOL", "False", "offload the optimizer to CPU",
         "megatron"},
        {"megatron_lm_use_precision_aware_optimizer", K::PythonBool, "BOOL", "False", "precision-aware optimizer",
         "megatron"},
        {"megatron_lm_decoder_last_pipeline_num_layers", K::Value, "N", nullptr, "layers of the last pipeline stage",
         "megatron"},
        {"megatron_lm_pp_degree", K::Value, "N", "1", "pipeline parallel degree", "megatron"},
        {"megatron_lm_num_micro_batches", K::Value, "N", nullptr, "micro batches", "megatron"},
        {"megatron_lm_sequence_parallelism", K::Value, "BOOL", nullptr, "sequence parallelism", "megatron"},
        {"megatron_lm_recompute_activations", K::Value, "BOOL", nullptr, "recompute activations", "megatron"},
        {"megatron_lm_use_distributed_optimizer", K::Value, "BOOL", nullptr, "distributed optimizer", "megatron"},
        {"megatron_lm_gradient_clipping", K::Value, "X", "1.0", "gradient clipping", "megatron"},
        {"megatron_lm_recompute_granularity", K::Value, "NAME", nullptr, "full or selective", "megatron"},
        {"megatron_lm_recompute_method", K::Value, "NAME", nullptr, "uniform or block", "megatron"},
        {"megatron_lm_recompute_num_layers", K::Value, "N", nullptr, "layers to recompute", "megatron"},
        {"megatron_lm_attention_backend", K::Value, "NAME", nullptr, "attention backend", "megatron"},
        {"megatron_lm_expert_model_parallel_size", K::Value, "N", nullptr, "expert model parallel size", "megatron"},
        {"megatron_lm_context_parallel_size", K::Value, "N", nullptr, "context parallel size", "megatron"},
        {"megatron_lm_attention_dropout", K::Value, "X", nullptr, "attention dropout", "megatron"},
        {"megatron_lm_hidden_dropout", K::Value, "X", nullptr, "hidden dropout", "megatron"},
        {"megatron_lm_attention_softmax_in_fp32", K::Value, "BOOL", nullptr, "attention softmax in fp32", "megatron"},
        {"megatron_lm_expert_tensor_parallel_size", K::Value, "N", nullptr, "expert tensor parallel size", "megatron"},
        {"megatron_lm_calculate_per_token_loss", K::Value, "BOOL", nullptr, "per-token loss", "megatron"},
        {"megatron_lm_use_rotary_position_embeddings", K::Value, "BOOL", nullptr, "rotary position embeddings",
         "megatron"},
        // FP8
        {"fp8_backend", K::Value, "BACKEND", nullptr, "ao, te or msamp (exported upper-case)", "fp8", 0, false,
         fp8BackendChoices()},
        {"fp8_use_autocast_during_eval", K::Switch, "", nullptr, "TE: autocast during evaluation", "fp8"},
        {"fp8_margin", K::Value, "N", "0", "TE margin", "fp8"},
        {"fp8_interval", K::Value, "N", "1", "TE interval", "fp8"},
        {"fp8_format", K::Value, "FORMAT", "HYBRID", helpWithValues("TE format: ", "fp8_config.fp8_format"), "fp8"},
        {"fp8_amax_history_len", K::Value, "N", "1024", "TE amax history length", "fp8"},
        {"fp8_amax_compute_algo", K::Value, "ALGO", "most_recent",
         helpWithValues("TE amax algorithm: ", "fp8_config.amax_compute_algo"), "fp8"},
        {"fp8_override_linear_precision", K::Value, "B,B,B", "false,false,false",
         "TE fprop,dgrad,wgrad in higher precision", "fp8"},
        {"fp8_opt_level", K::Value, "LEVEL", "O2", helpWithValues("MS-AMP level: ", "fp8_config.opt_level"), "fp8"},
        {"fp8_enable_fsdp_float8_all_gather", K::StrToBool, "BOOL", "true", "AO: float8 all-gather under FSDP", "fp8"},
        {"fp8_pad_inner_dim", K::StrToBool, "BOOL", "true", "AO: pad inner dimensions", "fp8"},
        // MPI
        {"mpirun_hostfile", K::Value, "FILE", nullptr,
         "launch on the hosts of this MPI hostfile ('HOST slots=N' or 'HOST:N') over SSH, one machine each in "
         "file order; accel starts the ranks itself (no mpirun)",
         "mpi"},
        // Parallelism config
        {"parallelism_config_dp_replicate_size", K::Value, "N", "1", "replicated data parallel size", "parallelism"},
        {"parallelism_config_dp_shard_size", K::Value, "N", "1", "sharded data parallel size", "parallelism"},
        {"parallelism_config_tp_size", K::Value, "N", "1", "tensor parallel size", "parallelism"},
        {"parallelism_config_cp_size", K::Value, "N", "1", "context parallel size", "parallelism"},
        {"parallelism_config_cp_comm_strategy", K::Value, "NAME", "allgather", "allgather or alltoall", "parallelism"},
        {"parallelism_config_cp_backend", K::Value, "NAME", "torch", "context parallel backend", "parallelism"},
        {"parallelism_config_sp_size", K::Value, "N", "1", "sequence parallel size", "parallelism"},
        {"parallelism_config_sp_backend", K::Value, "NAME", "deepspeed", "sequence parallel backend", "parallelism"},
        {"parallelism_config_sp_seq_length", K::Value, "N", nullptr, "sequence length", "parallelism"},
        {"parallelism_config_sp_seq_length_is_variable", K::PythonBool, "BOOL", "True",
         "variable sequence length (any text but empty means true, as in accelerate launch)", "parallelism"},
        {"parallelism_config_sp_attn_implementation", K::Value, "NAME", "sdpa", "attention implementation",
         "parallelism"},
        // Accelerate 1.0 (removed since): accepted and ignored
        {"use_xpu", K::Switch, "", nullptr, "Accelerate 1.0 (removed since; ignored)", "retired"},
        {"ipex", K::Switch, "", nullptr, "Accelerate 1.0 IPEX (removed in 1.13; ignored)", "retired"},
        {"mpirun_ccl", K::Value, "N", nullptr, "Accelerate 1.0 oneCCL workers (removed in 1.13; ignored)", "retired"},
        // AWS (accepted, unused)
        {"aws_access_key_id", K::Value, "ID", nullptr, "SageMaker only (unused)", "aws"},
        {"aws_secret_access_key", K::Value, "KEY", nullptr, "SageMaker only (unused)", "aws"},
    };
}
} // namespace

const std::vector<LaunchFlag> &launchFlags()
{
    static const std::vector<LaunchFlag> flags = makeFlags();
    return flags;
}

FlagType flagType(const std::string &name)
{
    static const std::set<std::string> integers = {
        "num_processes",
        "num_machines",
        "num_cpu_threads_per_process",
        "machine_rank",
        "main_process_port",
        "max_restarts",
        "zero_stage",
        "gradient_accumulation_steps",
        "fsdp_min_num_params",
        "megatron_lm_tp_degree",
        "megatron_lm_pp_degree",
        "megatron_lm_num_micro_batches",
        "megatron_lm_decoder_last_pipeline_num_layers",
        "megatron_lm_recompute_num_layers",
        "megatron_lm_expert_model_parallel_size",
        "megatron_lm_context_parallel_size",
        "megatron_lm_expert_tensor_parallel_size",
        "fp8_margin",
        "fp8_interval",
        "fp8_amax_history_len",
        "mpirun_ccl",
        "parallelism_config_dp_replicate_size",
        "parallelism_config_dp_shard_size",
        "parallelism_config_tp_size",
        "parallelism_config_cp_size",
        "parallelism_config_sp_size",
    };
    static const std::set<std::string> floats = {"monitor_interval", "gradient_clipping",
                                                 "megatron_lm_gradient_clipping", "megatron_lm_attention_dropout",
                                                 "megatron_lm_hidden_dropout"};
    if (integers.count(name))
        return FlagType::Integer;
    return floats.count(name) ? FlagType::Float : FlagType::Text;
}

bool isRetiredFlag(const std::string &name)
{
    const LaunchFlag *flag = findLaunchFlag(name);
    return flag && std::string(flag->group) == "retired";
}

const LaunchFlag *findLaunchFlag(const std::string &name)
{
    for (const LaunchFlag &flag : launchFlags()) {
        if (name == flag.name)
            return &flag;
    }
    return nullptr;
}

std::optional<int> wholeNumberAtLeast(const std::string &text, int minimum)
{
    try {
        size_t used = 0;
        const int value = std::stoi(text, &used);
        if (used == text.size() && value >= minimum)
            return value;
    } catch (const std::exception &) {
    }
    return std::nullopt;
}

} // namespace accel::launcher
