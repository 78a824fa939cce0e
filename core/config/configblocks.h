// The nested blocks of an Accelerate cluster config (dynamo_config, fsdp_config,
// deepspeed_config, megatron_lm_config, fp8_config, mpirun_config, ipex_config,
// parallelism_config) and the SageMaker-only keys. Included by clusterconfig.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace accel::config {

// A value whose type Accelerate leaves open (downcast_bf16: 'no' or false; FSDP1 stores a strategy
// name in fsdp_reshard_after_forward, FSDP2 a bool).
using BoolOrString = std::variant<bool, std::string>;
// A free-form scalar (Megatron-LM launcher extras, SageMaker additional_args).
using Scalar = std::variant<bool, std::int64_t, double, std::string>;

struct DynamoConfig {                           // dynamo_config
    std::optional<std::string> backend;         // dynamo_backend (upper-case, e.g. INDUCTOR)
    std::optional<std::string> mode;            // dynamo_mode: default | reduce-overhead | max-autotune
    std::optional<bool> useFullgraph;           // dynamo_use_fullgraph
    std::optional<bool> useDynamic;             // dynamo_use_dynamic
    std::optional<bool> useRegionalCompilation; // dynamo_use_regional_compilation
    bool isEmpty() const;
};

struct FsdpConfig {                                       // fsdp_config (keys carry the fsdp_ prefix)
    std::optional<std::int64_t> version;                  // fsdp_version: 1 | 2
    std::optional<BoolOrString> reshardAfterForward;      // fsdp_reshard_after_forward: v1 strategy name, v2 bool
    std::optional<std::string> shardingStrategy;          // fsdp_sharding_strategy (legacy v1)
    std::optional<bool> offloadParams;                    // fsdp_offload_params
    std::optional<std::string> autoWrapPolicy;            // fsdp_auto_wrap_policy
    std::optional<std::string> transformerLayerClsToWrap; // fsdp_transformer_layer_cls_to_wrap (comma list)
    std::optional<std::int64_t> minNumParams;             // fsdp_min_num_params
    std::optional<std::string> backwardPrefetch;          // fsdp_backward_prefetch (v1)
    std::optional<std::string> stateDictType;             // fsdp_state_dict_type
    std::optional<bool> forwardPrefetch;                  // fsdp_forward_prefetch (v1)
    std::optional<bool> useOrigParams;                    // fsdp_use_orig_params (v1)
    std::optional<bool> cpuRamEfficientLoading;           // fsdp_cpu_ram_efficient_loading
    std::optional<bool> syncModuleStates;                 // fsdp_sync_module_states (v1)
    std::optional<bool> activationCheckpointing;          // fsdp_activation_checkpointing
    std::optional<std::string> ignoredModules;            // fsdp_ignored_modules (regex)
    bool isEmpty() const;
};

struct DeepSpeedConfig {                                   // deepspeed_config
    std::optional<std::string> deepspeedConfigFile;        // deepspeed_config_file
    std::optional<std::int64_t> zeroStage;                 // zero_stage: 0..3
    std::optional<std::string> offloadOptimizerDevice;     // offload_optimizer_device: none | cpu | nvme
    std::optional<std::string> offloadParamDevice;         // offload_param_device
    std::optional<std::string> offloadOptimizerNvmePath;   // offload_optimizer_nvme_path
    std::optional<std::string> offloadParamNvmePath;       // offload_param_nvme_path
    std::optional<std::int64_t> gradientAccumulationSteps; // gradient_accumulation_steps
    std::optional<double> gradientClipping;                // gradient_clipping
    std::optional<bool> zero3Save16bitModel;               // zero3_save_16bit_model
    std::optional<bool> zero3InitFlag;                     // zero3_init_flag
    std::optional<std::string> moeLayerClsNames;           // deepspeed_moe_layer_cls_names
    std::optional<std::string> multinodeLauncher;          // deepspeed_multinode_launcher
    std::optional<std::string> hostfile;                   // deepspeed_hostfile
    std::optional<std::string> exclusionFilter;            // deepspeed_exclusion_filter
    std::optional<std::string> inclusionFilter;            // deepspeed_inclusion_filter
    bool isEmpty() const;
};

struct MegatronLmConfig {                        // megatron_lm_config (keys carry megatron_lm_)
    std::optional<std::int64_t> tpDegree;        // megatron_lm_tp_degree
    std::optional<bool> sequenceParallelism;     // megatron_lm_sequence_parallelism
    std::optional<std::int64_t> ppDegree;        // megatron_lm_pp_degree
    std::optional<std::int64_t> numMicroBatches; // megatron_lm_num_micro_batches
    std::optional<bool> recomputeActivations;    // megatron_lm_recompute_activations
    std::optional<bool> useDistributedOptimizer; // megatron_lm_use_distributed_optimizer
    std::optional<double> gradientClipping;      // megatron_lm_gradient_clipping
    // Launcher-only keys (megatron_lm_use_custom_fsdp, ..._attention_backend, ...), full key name
    // -> value. Only the names listed by megatronLmExtraKeys() are accepted.
    std::map<std::string, Scalar> extras;
    bool isEmpty() const;
};
const std::vector<std::string> &megatronLmExtraKeys();

// fp8_config. Accelerate's FP8 recipes read amax_history_len, amax_compute_algo and opt_level
// (its template and docs write those); its questionnaire writes amax_history_length,
// amax_compute_algorithm and optimization_level, which its launcher exports under names no recipe
// reads. Both spellings load and save as written; the long ones draw a warning.
struct Fp8Config {
    std::optional<std::string> backend;                       // backend: AO | TE | MSAMP (any case)
    std::optional<bool> useAutocastDuringEval;                // use_autocast_during_eval (TE)
    std::optional<std::int64_t> margin;                       // margin (TE)
    std::optional<std::int64_t> interval;                     // interval (TE)
    std::optional<std::string> fp8Format;                     // fp8_format: HYBRID | E4M3 | E5M2 (TE)
    std::optional<std::int64_t> amaxHistoryLen;               // amax_history_len (TE)
    std::optional<std::string> amaxComputeAlgo;               // amax_compute_algo: max | most_recent (TE)
    std::optional<std::string> optLevel;                      // opt_level: O1 | O2 (MSAMP)
    std::optional<std::int64_t> amaxHistoryLength;            // amax_history_length (questionnaire; no effect)
    std::optional<std::string> amaxComputeAlgorithm;          // amax_compute_algorithm (questionnaire; no effect)
    std::optional<std::string> optimizationLevel;             // optimization_level (questionnaire; no effect)
    std::optional<std::vector<bool>> overrideLinearPrecision; // override_linear_precision: [fprop, dgrad, wgrad]
    // The file's form of override_linear_precision when it was not a list: a bool (all three) or
    // text such as "(false, false, false)". Saved back as written while it still means the values.
    std::optional<BoolOrString> overrideLinearPrecisionWritten;
    std::optional<bool> enableFsdpFloat8AllGather; // enable_fsdp_float8_all_gather (AO)
    std::optional<bool> padInnerDim;               // pad_inner_dim (AO)
    bool isEmpty() const;
};
// The three booleans of an override_linear_precision written as text: "(false, false, true)",
// "[False, False, True]" or "false,false,true" (any case). Empty when the text is none of these.
std::vector<bool> parsePrecisionOverride(const std::string &text);

struct MpirunConfig {                          // mpirun_config
    std::optional<std::string> mpirunHostfile; // mpirun_hostfile (absolute path)
    std::optional<std::int64_t> mpirunCcl;     // mpirun_ccl (legacy, <= 1.12; kept, unused)
    bool isEmpty() const;
};

struct IpexConfig {             // ipex_config (legacy, <= 1.12; kept, unused)
    std::optional<bool> ipex;   // ipex
    std::optional<bool> useXpu; // use_xpu
    bool isEmpty() const;
};

struct ParallelismConfig {                           // parallelism_config (keys carry parallelism_config_)
    std::optional<std::int64_t> dpReplicateSize;     // parallelism_config_dp_replicate_size
    std::optional<std::int64_t> dpShardSize;         // parallelism_config_dp_shard_size
    std::optional<std::int64_t> tpSize;              // parallelism_config_tp_size
    std::optional<std::int64_t> cpSize;              // parallelism_config_cp_size
    std::optional<std::string> cpCommStrategy;       // parallelism_config_cp_comm_strategy: allgather | alltoall
    std::optional<std::string> cpBackend;            // parallelism_config_cp_backend (launcher-only)
    std::optional<std::int64_t> spSize;              // parallelism_config_sp_size
    std::optional<std::string> spBackend;            // parallelism_config_sp_backend
    std::optional<std::int64_t> spSeqLength;         // parallelism_config_sp_seq_length
    std::optional<bool> spSeqLengthIsVariable;       // parallelism_config_sp_seq_length_is_variable
    std::optional<std::string> spAttnImplementation; // parallelism_config_sp_attn_implementation
    bool isEmpty() const;
};

// Keys only a SageMaker config (compute_environment: AMAZON_SAGEMAKER) has.
struct SageMakerConfig {
    std::optional<std::string> ec2InstanceType;      // ec2_instance_type (required)
    std::optional<std::string> iamRoleName;          // iam_role_name (required)
    std::optional<std::string> imageUri;             // image_uri
    std::optional<std::string> profile;              // profile
    std::optional<std::string> region;               // region (us-east-1)
    std::optional<std::string> baseJobName;          // base_job_name (accelerate-sagemaker-<machines>)
    std::optional<std::string> pytorchVersion;       // pytorch_version
    std::optional<std::string> transformersVersion;  // transformers_version
    std::optional<std::string> pyVersion;            // py_version
    std::optional<std::string> sagemakerInputsFile;  // sagemaker_inputs_file
    std::optional<std::string> sagemakerMetricsFile; // sagemaker_metrics_file
    std::map<std::string, Scalar> additionalArgs;    // additional_args
};

} // namespace accel::config
