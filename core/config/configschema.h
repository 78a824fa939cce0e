// The one table of every key Accelerate's config files know: name, type and allowed values, as
// visitor functions over the typed model. The reader, the writer, the question flow's key setter
// and the "did you mean" suggestions are all driven by these functions, so a key is declared once.
//
// A visitor provides:
//   flag(key, std::optional<bool>&)
//   integer(key, std::optional<std::int64_t>&, Range)
//   number(key, std::optional<double>&)
//   text(key, std::optional<std::string>&, const Choices&)
//   boolOrText(key, std::optional<BoolOrString>&, const Choices&)
//   textList(key, std::optional<std::vector<std::string>>&)
//   flagList(key, std::optional<std::vector<bool>>&, size_t expectedSize,
//            std::optional<BoolOrString>& written)  -- `written`: the file's non-list form
#pragma once

#include "core/common/fsdpvalues.h"
#include "core/config/clusterconfig.h"

#include <optional>
#include <string>
#include <vector>

namespace accel::config::schema {

struct Choices {
    std::vector<std::string> values; // empty: any text
    bool caseInsensitive = false;
};

struct Range {
    std::optional<std::int64_t> minimum;
    std::optional<std::int64_t> maximum;
};

const Choices &anyText();

// The allowed values of the keys whose values other places offer too (the questionnaire, the
// launch flags, the studio's form, validation messages): each list is declared here once.
// mixed_precision: "no", "fp16", "bf16", "fp8", in MixedPrecision's order (its text form).
const std::vector<std::string> &mixedPrecisionNames();
// FSDP's lists are core/common/fsdpvalues.h's, which the torch-free sharding plan reads too.
inline const std::vector<std::string> &fsdpShardingStrategies()
{
    return fsdp::shardingStrategies();
}
inline const std::vector<std::string> &fsdpAutoWrapPolicies()
{
    return fsdp::autoWrapPolicies();
}
inline const std::vector<std::string> &fsdpBackwardPrefetchModes()
{
    return fsdp::backwardPrefetchModes();
}
inline const std::vector<std::string> &fsdpStateDictTypes()
{
    return fsdp::stateDictTypes();
}
inline const std::vector<std::string> &fsdp2StateDictTypes()
{
    return fsdp::fsdp2StateDictTypes();
}
const std::vector<std::string> &distributedTypeNames(bool sageMaker);
// compute_environment: "LOCAL_MACHINE", "AMAZON_SAGEMAKER", the enum's text forms in its order.
const std::vector<std::string> &computeEnvironmentNames();

// Where a value of a choice list is taken. Accelerate's own lists of one key differ by place:
// its launcher takes --dynamo_backend ipex, which its config enum lacks; its questionnaire offers
// fewer backends and modes than a config may hold. So each value says where it belongs.
enum Place : unsigned { InConfig = 1u, Asked = 2u, LaunchFlag = 4u, Everywhere = 7u };
struct PlacedValue {
    const char *name; // as a config writes it (dynamo_backend upper case)
    unsigned places;  // Place bits
};
std::vector<std::string> valuesIn(const std::vector<PlacedValue> &table, Place place);
const std::vector<PlacedValue> &dynamoBackendTable();
const std::vector<PlacedValue> &dynamoModeTable();
const std::vector<std::string> &dynamoBackends(); // valuesIn(dynamoBackendTable(), InConfig)
const std::vector<std::string> &dynamoModes();    // valuesIn(dynamoModeTable(), InConfig)

// "a, b, c": a list for a help text or a message.
std::string joined(const std::vector<std::string> &values, const char *separator = ", ");

template <typename V>
void visitDynamo(DynamoConfig &c, V &v)
{
    static const Choices backends{dynamoBackends(), true};
    static const Choices modes{dynamoModes()};
    v.text("dynamo_backend", c.backend, backends);
    v.text("dynamo_mode", c.mode, modes);
    v.flag("dynamo_use_fullgraph", c.useFullgraph);
    v.flag("dynamo_use_dynamic", c.useDynamic);
    v.flag("dynamo_use_regional_compilation", c.useRegionalCompilation);
}

template <typename V>
void visitFsdp(FsdpConfig &c, V &v)
{
    static const Choices strategies{fsdpShardingStrategies()};
    static const Choices wrap{fsdpAutoWrapPolicies()};
    static const Choices prefetch{fsdpBackwardPrefetchModes()};
    static const Choices stateDict{fsdpStateDictTypes()};
    v.flag("fsdp_activation_checkpointing", c.activationCheckpointing);
    v.text("fsdp_auto_wrap_policy", c.autoWrapPolicy, wrap);
    v.text("fsdp_backward_prefetch", c.backwardPrefetch, prefetch);
    v.flag("fsdp_cpu_ram_efficient_loading", c.cpuRamEfficientLoading);
    v.flag("fsdp_forward_prefetch", c.forwardPrefetch);
    v.text("fsdp_ignored_modules", c.ignoredModules, anyText());
    v.integer("fsdp_min_num_params", c.minNumParams, Range{0, {}});
    v.flag("fsdp_offload_params", c.offloadParams);
    v.boolOrText("fsdp_reshard_after_forward", c.reshardAfterForward, strategies);
    v.text("fsdp_sharding_strategy", c.shardingStrategy, strategies);
    v.text("fsdp_state_dict_type", c.stateDictType, stateDict);
    v.flag("fsdp_sync_module_states", c.syncModuleStates);
    v.text("fsdp_transformer_layer_cls_to_wrap", c.transformerLayerClsToWrap, anyText());
    v.flag("fsdp_use_orig_params", c.useOrigParams);
    v.integer("fsdp_version", c.version, Range{1, 2});
}

template <typename V>
void visitDeepSpeed(DeepSpeedConfig &c, V &v)
{
    static const Choices devices{{"none", "cpu", "nvme"}};
    static const Choices launchers{{"pdsh", "standard", "openmpi", "mvapich", "mpich", "nossh", "slurm"}};
    v.text("deepspeed_config_file", c.deepspeedConfigFile, anyText());
    v.text("deepspeed_exclusion_filter", c.exclusionFilter, anyText());
    v.text("deepspeed_hostfile", c.hostfile, anyText());
    v.text("deepspeed_inclusion_filter", c.inclusionFilter, anyText());
    v.text("deepspeed_moe_layer_cls_names", c.moeLayerClsNames, anyText());
    v.text("deepspeed_multinode_launcher", c.multinodeLauncher, launchers);
    v.integer("gradient_accumulation_steps", c.gradientAccumulationSteps, Range{1, {}});
    v.number("gradient_clipping", c.gradientClipping);
    v.text("offload_optimizer_device", c.offloadOptimizerDevice, devices);
    v.text("offload_optimizer_nvme_path", c.offloadOptimizerNvmePath, anyText());
    v.text("offload_param_device", c.offloadParamDevice, devices);
    v.text("offload_param_nvme_path", c.offloadParamNvmePath, anyText());
    v.flag("zero3_init_flag", c.zero3InitFlag);
    v.flag("zero3_save_16bit_model", c.zero3Save16bitModel);
    v.integer("zero_stage", c.zeroStage, Range{0, 3});
}

template <typename V>
void visitMegatronLm(MegatronLmConfig &c, V &v)
{
    v.number("megatron_lm_gradient_clipping", c.gradientClipping);
    v.integer("megatron_lm_num_micro_batches", c.numMicroBatches, Range{1, {}});
    v.integer("megatron_lm_pp_degree", c.ppDegree, Range{1, {}});
    v.flag("megatron_lm_recompute_activations", c.recomputeActivations);
    v.flag("megatron_lm_sequence_parallelism", c.sequenceParallelism);
    v.integer("megatron_lm_tp_degree", c.tpDegree, Range{1, {}});
    v.flag("megatron_lm_use_distributed_optimizer", c.useDistributedOptimizer);
    // extras (megatronLmExtraKeys()) are handled by the reader and writer directly.
}

template <typename V>
void visitFp8(Fp8Config &c, V &v)
{
    static const Choices algorithms{{"max", "most_recent"}};
    static const Choices levels{{"O1", "O2"}};
    v.text("amax_compute_algo", c.amaxComputeAlgo, algorithms);
    v.text("amax_compute_algorithm", c.amaxComputeAlgorithm, algorithms);
    v.integer("amax_history_len", c.amaxHistoryLen, Range{1, {}});
    v.integer("amax_history_length", c.amaxHistoryLength, Range{1, {}});
    v.text("backend", c.backend, Choices{{"AO", "TE", "MSAMP"}, true});
    v.flag("enable_fsdp_float8_all_gather", c.enableFsdpFloat8AllGather);
    v.text("fp8_format", c.fp8Format, Choices{{"HYBRID", "E4M3", "E5M2"}});
    v.integer("interval", c.interval, Range{1, {}});
    v.integer("margin", c.margin, Range{0, {}});
    v.text("opt_level", c.optLevel, levels);
    v.text("optimization_level", c.optimizationLevel, levels);
    v.flagList("override_linear_precision", c.overrideLinearPrecision, 3, c.overrideLinearPrecisionWritten);
    v.flag("pad_inner_dim", c.padInnerDim);
    v.flag("use_autocast_during_eval", c.useAutocastDuringEval);
}

template <typename V>
void visitMpirun(MpirunConfig &c, V &v)
{
    v.integer("mpirun_ccl", c.mpirunCcl, Range{1, {}});
    v.text("mpirun_hostfile", c.mpirunHostfile, anyText());
}

template <typename V>
void visitIpex(IpexConfig &c, V &v)
{
    v.flag("ipex", c.ipex);
    v.flag("use_xpu", c.useXpu);
}

template <typename V>
void visitParallelism(ParallelismConfig &c, V &v)
{
    v.text("parallelism_config_cp_backend", c.cpBackend, anyText());
    v.text("parallelism_config_cp_comm_strategy", c.cpCommStrategy, Choices{{"allgather", "alltoall"}});
    v.integer("parallelism_config_cp_size", c.cpSize, Range{1, {}});
    v.integer("parallelism_config_dp_replicate_size", c.dpReplicateSize, Range{1, {}});
    v.integer("parallelism_config_dp_shard_size", c.dpShardSize, Range{-1, {}});
    v.text("parallelism_config_sp_attn_implementation", c.spAttnImplementation, anyText());
    v.text("parallelism_config_sp_backend", c.spBackend, anyText());
    v.integer("parallelism_config_sp_seq_length", c.spSeqLength, Range{1, {}});
    v.flag("parallelism_config_sp_seq_length_is_variable", c.spSeqLengthIsVariable);
    v.integer("parallelism_config_sp_size", c.spSize, Range{1, {}});
    v.integer("parallelism_config_tp_size", c.tpSize, Range{1, {}});
}

// Scalar top-level keys of a LOCAL_MACHINE config (compute_environment, distributed_type,
// mixed_precision and the nested blocks are handled by the reader and writer).
template <typename V>
void visitClusterScalars(ClusterConfig &c, V &v)
{
    v.text("command_file", c.commandFile, anyText());
    v.textList("commands", c.commands);
    v.flag("debug", c.debug);
    v.boolOrText("downcast_bf16", c.downcastBf16, anyText());
    v.flag("enable_cpu_affinity", c.enableCpuAffinity);
    v.text("gpu_ids", c.gpuIds, anyText());
    v.integer("machine_rank", c.machineRank, Range{0, {}});
    v.text("main_process_ip", c.mainProcessIp, anyText());
    v.integer("main_process_port", c.mainProcessPort, Range{0, 65535});
    v.text("main_training_function", c.mainTrainingFunction, anyText());
    v.integer("num_machines", c.numMachines, Range{1, {}});
    v.integer("num_processes", c.numProcesses, Range{-1, {}});
    v.text("rdzv_backend", c.rdzvBackend, Choices{{"static", "c10d", "etcd", "etcd-v2"}});
    v.flag("same_network", c.sameNetwork);
    v.text("tpu_name", c.tpuName, anyText());
    v.textList("tpu_env", c.tpuEnv);
    v.flag("tpu_use_cluster", c.tpuUseCluster);
    v.flag("tpu_use_sudo", c.tpuUseSudo);
    v.textList("tpu_vm", c.tpuVm);
    v.text("tpu_zone", c.tpuZone, anyText());
    v.flag("use_cpu", c.useCpu);
}

// Scalar top-level keys of a SageMaker config (additional_args is handled by the reader/writer).
template <typename V>
void visitSageMakerScalars(ClusterConfig &c, V &v)
{
    SageMakerConfig &s = c.sagemaker;
    v.text("base_job_name", s.baseJobName, anyText());
    v.flag("debug", c.debug);
    v.text("ec2_instance_type", s.ec2InstanceType, anyText());
    v.flag("enable_cpu_affinity", c.enableCpuAffinity);
    v.text("gpu_ids", c.gpuIds, anyText());
    v.text("iam_role_name", s.iamRoleName, anyText());
    v.text("image_uri", s.imageUri, anyText());
    v.integer("num_machines", c.numMachines, Range{1, {}});
    v.text("profile", s.profile, anyText());
    v.text("py_version", s.pyVersion, anyText());
    v.text("pytorch_version", s.pytorchVersion, anyText());
    v.text("region", s.region, anyText());
    v.text("sagemaker_inputs_file", s.sagemakerInputsFile, anyText());
    v.text("sagemaker_metrics_file", s.sagemakerMetricsFile, anyText());
    v.text("transformers_version", s.transformersVersion, anyText());
    v.flag("use_cpu", c.useCpu);
}

// Calls block(key, visitFunction) for each nested block a LOCAL_MACHINE config may have.
template <typename F>
void forEachLocalBlock(ClusterConfig &c, F &&block)
{
    block("deepspeed_config", [&](auto &v) { visitDeepSpeed(c.deepspeed, v); });
    block("dynamo_config", [&](auto &v) { visitDynamo(c.dynamo, v); });
    block("fp8_config", [&](auto &v) { visitFp8(c.fp8, v); });
    block("fsdp_config", [&](auto &v) { visitFsdp(c.fsdp, v); });
    block("ipex_config", [&](auto &v) { visitIpex(c.ipex, v); });
    block("megatron_lm_config", [&](auto &v) { visitMegatronLm(c.megatronLm, v); });
    block("mpirun_config", [&](auto &v) { visitMpirun(c.mpirun, v); });
    block("parallelism_config", [&](auto &v) { visitParallelism(c.parallelism, v); });
}

// Calls block(key, visitFunction) for each nested block of the config's environment.
template <typename F>
void forEachBlock(ClusterConfig &c, F &&block)
{
    if (c.isSageMaker()) {
        block("dynamo_config", [&](auto &v) { visitDynamo(c.dynamo, v); });
        return;
    }
    forEachLocalBlock(c, block);
}

// What the schema declares of one key of a LOCAL_MACHINE config, by its dotted name
// ("num_processes", "fsdp_config.fsdp_sharding_strategy"): kind, allowed values, range. For
// editors that build a field from it (the studio's form), so they offer what the reader accepts.
struct KeyRule {
    enum class Kind { Flag, Integer, Number, Text, BoolOrText, TextList, FlagList };
    Kind kind = Kind::Text;
    Choices choices;
    Range range;
};
// Null for a key the schema does not declare (compute_environment, distributed_type and
// mixed_precision are the reader's and writer's own).
const KeyRule *keyRule(const std::string &dottedKey);
// The values a menu offers for the key: its choices, or each whole number of a bounded integer
// range ("fsdp_config.fsdp_version": 1, 2); empty for a key of any value or an unknown key.
std::vector<std::string> allowedValues(const std::string &dottedKey);

// Every key a config of this environment may have at the top level, sorted.
std::vector<std::string> topLevelKeys(bool sageMaker);
// Every key of a nested block ("fsdp_config" -> fsdp_activation_checkpointing, ...).
std::vector<std::string> blockKeys(const std::string &block);
// The prefix Accelerate's launcher adds to a block's keys written without it ("fsdp_" for
// fsdp_config, "dynamo_" for dynamo_config), "" for other blocks.
std::string blockPrefix(const std::string &block);

} // namespace accel::config::schema
