// The table of nativekeys.h: every Accelerate setting and what a native job does with it.
#include "core/config/nativekeys.h"

#include "core/common/accelerateenv.h"
#include "core/common/fsdpvalues.h"
#include "core/config/configschema.h"

namespace accel::config::native {

namespace {

constexpr Verdict A = Verdict::Acted;
constexpr Verdict R = Verdict::Refused;
constexpr Verdict M = Verdict::Meaningless;
constexpr Verdict P = Verdict::PythonOnly;
constexpr Actor Startup = Actor::Startup;
constexpr Actor Launch = Actor::Launcher;
constexpr Actor Runtime = Actor::Runtime;
constexpr Actor Plan = Actor::Plan;
constexpr Actor Fp8 = Actor::Fp8;
constexpr Actor None = Actor::Nobody;

const char *const kTpuOnly =
    "TPU pods and `accelerate tpu-config` only; accel launch refuses TPU (`distributed_type: XLA`)";
const char *const kSageMaker =
    "SageMaker only: accel launch refuses `compute_environment: AMAZON_SAGEMAKER` as a whole";
const char *const kDynamo = "libtorch runs the model eagerly in C++: torch.compile (TorchDynamo) has no C++ "
                            "counterpart, so the job runs uncompiled, with the numbers eager PyTorch gives";
const char *const kTorchrunAgent = "torchrun's agent variables, exported as torchrun does; the runtime takes the rank "
                                   "and world size from RANK and WORLD_SIZE";
const char *const kDeepSpeedTuning =
    "communication and memory tuning of DeepSpeed's engine: no effect on the numbers of a native job, whose "
    "sharding engine gathers and reduces unit by unit";
const char *const kDeepSpeedScaler =
    "DeepSpeed's fp16 loss scaler: with fp16 on, a value other than the runtime's dynamic loss scaler "
    "(torch.amp.GradScaler's: initial scale 2^16, doubled after 2000 steps without overflow, halved at each "
    "overflow, no floor) is refused; with fp16 off it has no effect";
const char *const kDeepSpeedLogging =
    "DeepSpeed's own logging and profiling: a native job logs its metrics every training.log_every steps into the "
    "run directory";

// The FSDP rows' text names the values of core/common/fsdpvalues.h, and the Megatron-LM and FP8
// rows the variables of core/common/accelerateenv.h (rows hold const char *: built once, kept for
// the program's life).
struct RowProse {
    std::string strategies, wrapPolicies, wrapClasses, minNumParams, stateDictTypes;
    std::string distributedTypes, megatron, fp8Overrides;
};

const RowProse &rowProse()
{
    static const RowProse prose{
        "FSDP1: " + schema::joined(fsdp::shardingStrategies()) + " (or 1-" +
            std::to_string(fsdp::shardingStrategies().size()) + ") as ZeRO stages",
        "which offered modules become sharding units: " + schema::joined(fsdp::autoWrapPolicies()),
        std::string("the classes ") + fsdp::kTransformerBasedWrap +
            " makes units (the C++ class names, e.g. Block, LlamaDecoderLayer)",
        std::string(fsdp::kSizeBasedWrap) + ": modules with at least this many parameters become units",
        std::string(fsdp::kFullStateDict) + " or " + fsdp::kShardedStateDict + " checkpoints; " +
            fsdp::kLocalStateDict + " is refused",
        std::string("NO and MULTI_CPU: DDP over CPU ranks; MULTI_GPU: DDP over CUDA ranks; FSDP and DEEPSPEED: the "
                    "sharding engine (docs/sharding.md); MEGATRON_LM: refused by the ranks (") +
            accelerateenv::kUseMegatronLm +
            "). For a job, accel launch refuses XLA and the other accelerators (MULTI_NPU, MULTI_MLU, MULTI_SDAA, "
            "MULTI_MUSA, MULTI_XPU, MULTI_HPU, MULTI_NEURON): the runtime runs on CPUs and CUDA GPUs",
        std::string("part of `distributed_type: MEGATRON_LM`, which a native job refuses as a whole (see ") +
            accelerateenv::kUseMegatronLm + ")",
        std::string(accelerateenv::kFp8OverrideFprop) + " " + accelerateenv::kFp8OverrideDgrad + " " +
            accelerateenv::kFp8OverrideWgrad,
    };
    return prose;
}

std::vector<Section> makeSections()
{
    const char *const kMegatron = rowProse().megatron.c_str();
    return {
        {"Top-level keys",
         {
             {"compute_environment", "", "ClusterConfig.compute_environment SageMakerConfig.compute_environment", "", A,
              Launch, "", "LOCAL_MACHINE: accel launch starts the ranks of this machine. AMAZON_SAGEMAKER is refused."},
             {"distributed_type", "", "ClusterConfig.distributed_type SageMakerConfig.distributed_type", "", A, Launch,
              "", rowProse().distributedTypes.c_str()},
             {"mixed_precision", accelerateenv::kMixedPrecision,
              "ClusterConfig.mixed_precision SageMakerConfig.mixed_precision", "", A, Runtime, "",
              "no: float32; bf16: bfloat16 autocast; fp16: float16 autocast with dynamic loss scaling on CUDA ranks, "
              "refused on CPU ranks; fp8: the FP8 recipe of fp8_config (docs/fp8.md). The job's "
              "training.mixed_precision wins over it"},
             {"use_cpu", accelerateenv::kUseCpu, "ClusterConfig.use_cpu SageMakerConfig.use_cpu", "", A, Runtime, "",
              "true: the ranks train on the CPU even where CUDA is available"},
             {"debug", accelerateenv::kDebugMode, "ClusterConfig.debug SageMakerConfig.debug", "", A, Runtime, "",
              "true: before each collective the ranks compare their tensors' shapes and fail naming every rank's "
              "shape when they differ"},
             {"num_processes", "WORLD_SIZE", "ClusterConfig.num_processes", "", A, Runtime, "",
              "the number of ranks accel launch starts (WORLD_SIZE)"},
             {"machine_rank", "", "ClusterConfig.machine_rank", "", A, Launch, "",
              "this machine's index: the global ranks of its processes (RANK) and GROUP_RANK"},
             {"num_machines", "", "ClusterConfig.num_machines SageMakerConfig.num_machines", "", A, Launch, "",
              "GROUP_WORLD_SIZE; each machine starts num_processes / num_machines ranks (LOCAL_WORLD_SIZE)"},
             {"gpu_ids", "CUDA_VISIBLE_DEVICES", "ClusterConfig.gpu_ids SageMakerConfig.gpu_ids", "", A, Runtime, "",
              "the ranks' CUDA_VISIBLE_DEVICES: CUDA ranks use the GPUs it leaves visible, local rank i the i-th"},
             {"main_process_ip", "MASTER_ADDR", "ClusterConfig.main_process_ip", "", A, Runtime, "",
              "MASTER_ADDR: the address of rank 0's c10d TCPStore"},
             {"main_process_port", "MASTER_PORT", "ClusterConfig.main_process_port", "", A, Runtime, "",
              "MASTER_PORT: the port of rank 0's TCPStore (0: a free port accel launch chooses)"},
             {"rdzv_backend", "", "ClusterConfig.rdzv_backend", "", A, Launch, "",
              "static: every machine has its machine_rank and rank 0 hosts the c10d TCPStore; c10d: the machines agree "
              "on machine ranks at rendezvous, then rank 0 hosts the store (docs/run-directory.md); etcd and etcd-v2 "
              "are refused"},
             {"same_network", "", "ClusterConfig.same_network", "", A, Launch, "",
              "true: every machine reaches machine 0 at main_process_ip directly (MASTER_ADDR)"},
             {"main_training_function", "", "ClusterConfig.main_training_function", "", M, Launch, "main",
              "the function accelerate's TPU and notebook launchers call; a job is started from its job file"},
             {"enable_cpu_affinity", accelerateenv::kCpuAffinity,
              "ClusterConfig.enable_cpu_affinity SageMakerConfig.enable_cpu_affinity", "", A, Startup, "",
              "true: each rank pins itself to the CPUs of its NUMA node as it starts (sched_setaffinity; a CUDA rank "
              "to its GPU's node, as Accelerate does; a CPU rank to node local_rank x nodes / local ranks) and "
              "prints the CPUs it got"},
             {"downcast_bf16", "", "ClusterConfig.downcast_bf16", "", M, Launch, "false,no", kTpuOnly},
             {"tpu_name", "", "ClusterConfig.tpu_name", "", M, Launch, "", kTpuOnly},
             {"tpu_zone", "", "ClusterConfig.tpu_zone", "", M, Launch, "", kTpuOnly},
             {"tpu_use_cluster", "", "ClusterConfig.tpu_use_cluster", "", M, Launch, "false", kTpuOnly},
             {"tpu_use_sudo", "", "ClusterConfig.tpu_use_sudo", "", M, Launch, "false", kTpuOnly},
             {"tpu_vm", "", "ClusterConfig.tpu_vm", "", M, Launch, "", kTpuOnly},
             {"tpu_env", "", "ClusterConfig.tpu_env", "", M, Launch, "", kTpuOnly},
             {"command_file", "", "ClusterConfig.command_file", "", M, Launch, "", kTpuOnly},
             {"commands", "", "ClusterConfig.commands", "", M, Launch, "", kTpuOnly},
             {"dynamo_config", "", "ClusterConfig.dynamo_config SageMakerConfig.dynamo_config", "", A, Launch, "",
              "the block of dynamo_ keys below"},
             {"fsdp_config", "", "ClusterConfig.fsdp_config", "", A, Launch, "", "the block of fsdp_ keys below"},
             {"deepspeed_config", "", "ClusterConfig.deepspeed_config", "", A, Launch, "",
              "the block of DeepSpeed keys below"},
             {"fp8_config", "", "ClusterConfig.fp8_config", "", A, Launch, "", "the block of FP8 keys below"},
             {"parallelism_config", "", "ClusterConfig.parallelism_config", "", A, Launch, "",
              "the block of parallelism_config_ keys below"},
             {"megatron_lm_config", "", "ClusterConfig.megatron_lm_config", "", R, Startup, "*", kMegatron},
             {"mpirun_config", "", "ClusterConfig.mpirun_config", "", A, Launch, "", "the block of MPI keys below"},
             {"ipex_config", "", "", "", M, Launch, "", "the block of IPEX keys below (Accelerate 1.12 and older)"},
         }},
        {"SageMaker keys",
         {
             {"base_job_name", "", "SageMakerConfig.base_job_name", "", R, Launch, "*", kSageMaker},
             {"ec2_instance_type", "", "SageMakerConfig.ec2_instance_type", "", R, Launch, "*", kSageMaker},
             {"iam_role_name", "", "SageMakerConfig.iam_role_name", "", R, Launch, "*", kSageMaker},
             {"image_uri", "", "SageMakerConfig.image_uri", "", R, Launch, "*", kSageMaker},
             {"profile", "", "SageMakerConfig.profile", "", R, Launch, "*", kSageMaker},
             {"region", "", "SageMakerConfig.region", "", R, Launch, "*", kSageMaker},
             {"pytorch_version", "", "SageMakerConfig.pytorch_version", "", R, Launch, "*", kSageMaker},
             {"transformers_version", "", "SageMakerConfig.transformers_version", "", R, Launch, "*", kSageMaker},
             {"py_version", "", "SageMakerConfig.py_version", "", R, Launch, "*", kSageMaker},
             {"sagemaker_inputs_file", "", "SageMakerConfig.sagemaker_inputs_file", "", R, Launch, "*", kSageMaker},
             {"sagemaker_metrics_file", "", "SageMakerConfig.sagemaker_metrics_file", "", R, Launch, "*", kSageMaker},
             {"additional_args", "", "SageMakerConfig.additional_args", "", R, Launch, "*", kSageMaker},
         }},
        {"dynamo_config",
         {
             {"dynamo_config.dynamo_backend", accelerateenv::kDynamoBackend, "TorchDynamoPlugin.backend", "", M,
              Startup, "no", kDynamo},
             {"dynamo_config.dynamo_mode", accelerateenv::kDynamoMode, "TorchDynamoPlugin.mode", "", M, Startup,
              "default", kDynamo},
             {"dynamo_config.dynamo_use_fullgraph", accelerateenv::kDynamoUseFullgraph, "TorchDynamoPlugin.fullgraph",
              "", M, Startup, "false", kDynamo},
             {"dynamo_config.dynamo_use_dynamic", accelerateenv::kDynamoUseDynamic, "TorchDynamoPlugin.dynamic", "", M,
              Startup, "false,none", kDynamo},
             {"dynamo_config.dynamo_use_regional_compilation", accelerateenv::kDynamoUseRegionalCompilation,
              "TorchDynamoPlugin.use_regional_compilation", "", M, Startup, "false", kDynamo},
             {"", "", "TorchDynamoPlugin.options TorchDynamoPlugin.disable", "", P, None, "", kDynamo},
         }},
        {"fsdp_config",
         {
             {"", accelerateenv::kUseFsdp, "", "", A, Plan, "",
              "true (distributed_type FSDP): the sharding engine with the plan of the FSDP_* variables"},
             {"fsdp_config.fsdp_version", "FSDP_VERSION", "FullyShardedDataParallelPlugin.fsdp_version", "", A, Plan,
              "", "1 or 2: FSDP1's or FSDP2's defaults and gradient averaging (docs/sharding.md)"},
             {"fsdp_config.fsdp_sharding_strategy", "FSDP_SHARDING_STRATEGY",
              "FullyShardedDataParallelPlugin.sharding_strategy", "", A, Plan, "", rowProse().strategies.c_str()},
             {"fsdp_config.fsdp_reshard_after_forward", "FSDP_RESHARD_AFTER_FORWARD",
              "FullyShardedDataParallelPlugin.reshard_after_forward", "", A, Plan, "",
              "FSDP2: true frees gathered parameters after forward, false keeps them until backward; an integer "
              "(resharding to a smaller group) is refused. FSDP1: the strategy when FSDP_SHARDING_STRATEGY is unset"},
             {"fsdp_config.fsdp_offload_params", "FSDP_OFFLOAD_PARAMS", "FullyShardedDataParallelPlugin.cpu_offload",
              "", A, Plan, "", "true: parameters, gradients and optimizer state live in host memory"},
             {"fsdp_config.fsdp_auto_wrap_policy", "FSDP_AUTO_WRAP_POLICY",
              "FullyShardedDataParallelPlugin.auto_wrap_policy", "", A, Plan, "", rowProse().wrapPolicies.c_str()},
             {"fsdp_config.fsdp_transformer_layer_cls_to_wrap", "FSDP_TRANSFORMER_CLS_TO_WRAP",
              "FullyShardedDataParallelPlugin.transformer_cls_names_to_wrap", "", A, Plan, "",
              rowProse().wrapClasses.c_str()},
             {"fsdp_config.fsdp_min_num_params", "FSDP_MIN_NUM_PARAMS", "FullyShardedDataParallelPlugin.min_num_params",
              "", A, Plan, "", rowProse().minNumParams.c_str()},
             {"fsdp_config.fsdp_backward_prefetch", "FSDP_BACKWARD_PREFETCH",
              "FullyShardedDataParallelPlugin.backward_prefetch", "", A, Plan, "",
              "FSDP1: when backward gathers the next unit; FSDP2: dropped with a note, as Accelerate does"},
             {"fsdp_config.fsdp_state_dict_type", "FSDP_STATE_DICT_TYPE",
              "FullyShardedDataParallelPlugin.state_dict_type", "", A, Plan, "", rowProse().stateDictTypes.c_str()},
             {"fsdp_config.fsdp_forward_prefetch", "FSDP_FORWARD_PREFETCH",
              "FullyShardedDataParallelPlugin.forward_prefetch", "", A, Plan, "",
              "FSDP1: forward gathers the next unit early; true under FSDP2 is refused (FSDP2 has none)"},
             {"fsdp_config.fsdp_use_orig_params", "FSDP_USE_ORIG_PARAMS",
              "FullyShardedDataParallelPlugin.use_orig_params", "", M, Startup, "true",
              "false makes FSDP1 hand the optimizer its flat parameters; the runtime's units always keep the "
              "original parameters as views of the flat buffer (true), which changes no number of a job"},
             {"fsdp_config.fsdp_cpu_ram_efficient_loading", "FSDP_CPU_RAM_EFFICIENT_LOADING",
              "FullyShardedDataParallelPlugin.cpu_ram_efficient_loading", "", A, Plan, "",
              "weights are read where a recipe marks them loaded on every rank, whatever it says (noted)"},
             {"fsdp_config.fsdp_sync_module_states", "FSDP_SYNC_MODULE_STATES",
              "FullyShardedDataParallelPlugin.sync_module_states", "", A, Plan, "",
              "parameters are broadcast from rank 0 at prepare; false is noted"},
             {"fsdp_config.fsdp_activation_checkpointing", "FSDP_ACTIVATION_CHECKPOINTING",
              "FullyShardedDataParallelPlugin.activation_checkpointing", "", R, Plan, "false",
              "true is refused: FSDP's activation checkpointing is not implemented (the causal_lm recipe's "
              "training.gradient_checkpointing is)"},
             {"", "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD",
              "FullyShardedDataParallelPlugin.activation_checkpointing_offload", "", R, Startup, "false",
              "true is refused: offloading checkpointed activations is not implemented"},
             {"fsdp_config.fsdp_ignored_modules", "FSDP_IGNORED_MODULES",
              "FullyShardedDataParallelPlugin.ignored_modules", "", R, Plan, "",
              "refused: ignored modules are not implemented"},
             {"", "",
              "FullyShardedDataParallelPlugin.mixed_precision_policy FullyShardedDataParallelPlugin.state_dict_config "
              "FullyShardedDataParallelPlugin.optim_state_dict_config FullyShardedDataParallelPlugin.limit_all_gathers "
              "FullyShardedDataParallelPlugin.param_init_fn",
              "", P, None, "",
              "FSDP's Python objects and callables; a native job's precision is mixed_precision, its units are "
              "initialised by the recipe"},
         }},
        {"deepspeed_config",
         {
             {"", accelerateenv::kUseDeepSpeed, "", "", A, Plan, "",
              "true (distributed_type DEEPSPEED): the sharding engine as ZeRO stages"},
             {"deepspeed_config.deepspeed_config_file", accelerateenv::kDeepSpeedConfigFile,
              "DeepSpeedPlugin.hf_ds_config", "", A, Plan, "",
              "the DeepSpeed JSON file; its keys are in the DeepSpeed file table below"},
             {"", accelerateenv::kDeepSpeedConfigFields, "", "", A, Plan, "",
              "the deepspeed_config keys the config file set: any of them beside deepspeed_config_file is refused, "
              "as Accelerate does"},
             {"deepspeed_config.zero_stage", accelerateenv::kDeepSpeedZeroStage, "DeepSpeedPlugin.zero_stage",
              "zero_optimization.stage", A, Plan, "", "0-3: what is sharded (optimizer state, gradients, parameters)"},
             {"deepspeed_config.gradient_accumulation_steps", accelerateenv::kGradientAccumulationSteps,
              "DeepSpeedPlugin.gradient_accumulation_steps", "gradient_accumulation_steps", A, Plan, "",
              "micro-batches per optimizer step (\"auto\": the job's training.gradient_accumulation_steps)"},
             {"deepspeed_config.gradient_clipping", accelerateenv::kGradientClipping,
              "DeepSpeedPlugin.gradient_clipping", "gradient_clipping", A, Plan, "",
              "the gradients' global norm is clipped to this value"},
             {"deepspeed_config.offload_optimizer_device", accelerateenv::kDeepSpeedOffloadOptimizerDevice,
              "DeepSpeedPlugin.offload_optimizer_device", "zero_optimization.offload_optimizer.device", A, Plan, "",
              "cpu: optimizer state in host memory (stage 1+); nvme is refused"},
             {"deepspeed_config.offload_param_device", accelerateenv::kDeepSpeedOffloadParamDevice,
              "DeepSpeedPlugin.offload_param_device", "zero_optimization.offload_param.device", A, Plan, "",
              "cpu: parameters in host memory (stage 3; noted below it, as DeepSpeed ignores it there); nvme is "
              "refused"},
             {"deepspeed_config.offload_optimizer_nvme_path", "", "DeepSpeedPlugin.offload_optimizer_nvme_path",
              "zero_optimization.offload_optimizer.nvme_path", M, Launch, "none",
              "NVMe offload is refused, so a path asks for nothing"},
             {"deepspeed_config.offload_param_nvme_path", "", "DeepSpeedPlugin.offload_param_nvme_path",
              "zero_optimization.offload_param.nvme_path", M, Launch, "none",
              "NVMe offload is refused, so a path asks for nothing"},
             {"deepspeed_config.zero3_init_flag", accelerateenv::kDeepSpeedZero3Init, "DeepSpeedPlugin.zero3_init_flag",
              "", A, Plan, "", "stage 3: units a recipe builds are sharded as they are built (wrapBuilt)"},
             {"deepspeed_config.zero3_save_16bit_model", accelerateenv::kDeepSpeedZero3Save16BitModel,
              "DeepSpeedPlugin.zero3_save_16bit_model", "zero_optimization.stage3_gather_16bit_weights_on_model_save",
              A, Plan, "", "stage 3: the saved model is gathered whole"},
             {"deepspeed_config.deepspeed_moe_layer_cls_names", accelerateenv::kDeepSpeedMoeLayerClassNames,
              "DeepSpeedPlugin.transformer_moe_cls_names", "", R, Plan, "",
              "refused: mixture-of-experts layers are not implemented"},
             {"deepspeed_config.deepspeed_multinode_launcher", "", "", "", A, Launch, "",
              "accel launch starts each machine's ranks itself (as `standard`); another launcher on several machines "
              "is noted"},
             {"deepspeed_config.deepspeed_hostfile", "", "", "", M, Launch, "",
              "the deepspeed runner's hosts; from the config, accel launch starts each machine's ranks itself (run it "
              "on every machine); the --deepspeed_hostfile flag launches on the file's hosts over SSH "
              "(docs/remote.md)"},
             {"deepspeed_config.deepspeed_inclusion_filter", "", "", "", M, Launch, "",
              "the deepspeed runner's host filter; from the config, not used; the --deepspeed_inclusion_filter / "
              "--deepspeed_exclusion_filter flags filter --deepspeed_hostfile"},
             {"deepspeed_config.deepspeed_exclusion_filter", "", "", "", M, Launch, "",
              "the deepspeed runner's host filter; from the config, not used; the --deepspeed_inclusion_filter / "
              "--deepspeed_exclusion_filter flags filter --deepspeed_hostfile"},
             {"", "PYTHONPATH", "", "", M, Launch, "*",
              "DeepSpeed's launcher adds the working directory for Python; accel-worker runs no Python"},
             {"", "", "DeepSpeedPlugin.is_train_batch_min", "", P, None, "",
              "the batch size of a native job is the job's training.batch_size"},
         }},
        {"DeepSpeed file (deepspeed_config_file)",
         {
             {"", "", "", "zero_optimization", A, Plan, "", "the ZeRO block: its keys below"},
             {"", "", "", "zero_optimization.offload_optimizer", A, Plan, "", "the optimizer offload block"},
             {"", "", "", "zero_optimization.offload_param", A, Plan, "", "the parameter offload block"},
             {"", "", "", "zero_optimization.stage3_prefetch_bucket_size", A, Plan, "",
              "0 turns stage 3's forward and backward prefetch off"},
             {"", "", "", "zero_optimization.stage3_gather_fp16_weights_on_model_save", A, Plan, "",
              "the older spelling of stage3_gather_16bit_weights_on_model_save"},
             {"", "", "", "bf16", A, Startup, "", "the bf16 block"},
             {"", "", "", "bf16.enabled", A, Startup, "",
              "true: the job trains in bf16 (bfloat16 autocast), as Accelerate's DeepSpeed integration does; "
              "\"auto\": mixed_precision decides; false or auto with mixed_precision bf16 against fp16 enabled, and "
              "other conflicts with mixed_precision, are refused"},
             {"", "", "", "fp16", A, Startup, "", "the fp16 block"},
             {"", "", "", "fp16.enabled", A, Startup, "",
              "true: the job trains in fp16 (float16 autocast with dynamic loss scaling, on CUDA ranks; refused on "
              "CPU ranks as mixed_precision fp16 is); \"auto\": mixed_precision decides"},
             {"", "", "", "fp16.auto_cast", R, Startup, "true",
              "with fp16 on, false (DeepSpeed's float16 weights) is refused: the runtime keeps float32 weights and "
              "autocasts"},
             {"", "", "", "fp16.loss_scale", R, Startup, "0", kDeepSpeedScaler},
             {"", "", "", "fp16.initial_scale_power", R, Startup, "16", kDeepSpeedScaler},
             {"", "", "", "fp16.loss_scale_window", R, Startup, "2000", kDeepSpeedScaler},
             {"", "", "", "fp16.hysteresis", R, Startup, "1", kDeepSpeedScaler},
             {"", "", "", "fp16.consecutive_hysteresis", R, Startup, "false", kDeepSpeedScaler},
             {"", "", "", "fp16.min_loss_scale", R, Startup, "0", kDeepSpeedScaler},
             {"", "", "", "train_batch_size", R, Startup, "auto",
              "a number is refused: the job's training.batch_size (per rank) and gradient accumulation set the "
              "batch; write \"auto\""},
             {"", "", "", "train_micro_batch_size_per_gpu", R, Startup, "auto",
              "a number is refused: the job's training.batch_size sets the batch per rank; write \"auto\""},
             {"", "", "", "optimizer", R, Plan, "",
              "refused: the runtime steps the job's optimizer and scheduler (remove the block)"},
             {"", "", "", "scheduler", R, Plan, "",
              "refused: the runtime steps the job's optimizer and scheduler (remove the block)"},
             {"", "", "", "pipeline", R, Startup, "{}",
              "refused: pipeline parallel training is out of scope for the native runtime"},
             {"", "", "", "activation_checkpointing", R, Plan, "{}",
              "refused: DeepSpeed's activation checkpointing is not implemented"},
             {"", "", "", "sparse_attention", R, Plan, "{}", "refused: sparse attention is not implemented"},
             {"", "", "", "amp", R, Startup, "",
              "refused: Apex AMP is not implemented; use bf16 or fp16.enabled (or mixed_precision)"},
             {"", "", "", "prescale_gradients", R, Startup, "false",
              "true is refused: the runtime averages gradients as Accelerate's DeepSpeed does by default"},
             {"", "", "", "gradient_predivide_factor", R, Startup, "1,1.0",
              "a factor other than 1 is refused: the runtime averages gradients as Accelerate's DeepSpeed does by "
              "default"},
             {"", "", "", "communication_data_type", R, Startup, "fp32,float32,null",
              "a type other than fp32 is refused: the runtime reduces gradients in float32"},
             {"", "", "", "sparse_gradients", R, Startup, "false",
              "true is refused: sparse gradients are not implemented"},
             {"", "", "", "zero_optimization.zero_quantized_weights", R, Startup, "false",
              "true is refused: ZeRO++ quantized weights change the numbers and are not implemented"},
             {"", "", "", "zero_optimization.zero_quantized_gradients", R, Startup, "false",
              "true is refused: ZeRO++ quantized gradients change the numbers and are not implemented"},
             {"", "", "", "zero_optimization.mics_shard_size", R, Startup, "-1,0",
              "a size is refused: MiCS (sharding in sub-groups) is not implemented; FSDP1's HYBRID_SHARD shards "
              "inside each machine"},
             {"", "", "", "zero_optimization.offload_optimizer.pin_memory", M, Startup, "false",
              "page-locked host memory for GPU copies: no effect on the numbers"},
             {"", "", "", "zero_optimization.offload_param.pin_memory", M, Startup, "false",
              "page-locked host memory for GPU copies: no effect on the numbers"},
             {"", "", "", "zero_optimization.offload_optimizer.buffer_count", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.offload_optimizer.fast_init", M, Startup, "false", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.offload_optimizer.ratio", M, Startup, "1,1.0", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.offload_param.buffer_count", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.offload_param.buffer_size", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.offload_param.max_in_cpu", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.allgather_partitions", M, Startup, "true", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.allgather_bucket_size", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.overlap_comm", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.reduce_scatter", M, Startup, "true", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.reduce_bucket_size", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.contiguous_gradients", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.sub_group_size", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.round_robin_gradients", M, Startup, "false", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.stage3_param_persistence_threshold", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.stage3_max_live_parameters", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.stage3_max_reuse_distance", M, Startup, "", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.zero_hpz_partition_size", M, Startup, "1", kDeepSpeedTuning},
             {"", "", "", "zero_optimization.memory_efficient_linear", M, Startup, "true", kDeepSpeedTuning},
             {"", "", "", "steps_per_print", M, Startup, "", kDeepSpeedLogging},
             {"", "", "", "wall_clock_breakdown", M, Startup, "false", kDeepSpeedLogging},
             {"", "", "", "dump_state", M, Startup, "false", kDeepSpeedLogging},
             {"", "", "", "memory_breakdown", M, Startup, "false", kDeepSpeedLogging},
             {"", "", "", "tensorboard", M, Startup, "", kDeepSpeedLogging},
             {"", "", "", "wandb", M, Startup, "", kDeepSpeedLogging},
             {"", "", "", "csv_monitor", M, Startup, "", kDeepSpeedLogging},
             {"", "", "", "comms_logger", M, Startup, "", kDeepSpeedLogging},
             {"", "", "", "flops_profiler", M, Startup, "", kDeepSpeedLogging},
             {"", "", "", "zero_allow_untested_optimizer", M, Startup, "false",
              "DeepSpeed's check of the optimizer class; the runtime steps the job's own optimizer"},
             {"", "", "", "zero_force_ds_cpu_optimizer", M, Startup, "",
              "DeepSpeed's CPU Adam under offload; the runtime steps the job's optimizer where its state lives"},
             {"", "", "", "seq_parallel_communication_data_type", M, Startup, "",
              "the dtype of sequence parallelism's all-to-all (parallelism_config sp_size above 1, which is "
              "refused): no effect without it"},
         }},
        {"megatron_lm_config",
         {
             {"", accelerateenv::kUseMegatronLm, "", "", R, Startup, "false",
              "true (distributed_type MEGATRON_LM) is refused as a whole: Megatron-LM's tensor and sequence "
              "parallelism and its training loop are not implemented by the native runtime, and pipeline parallel "
              "training is out of scope. Use distributed_type FSDP or DEEPSPEED for sharded data parallel, and "
              "parallelism_config tp_size / cp_size for tensor / context parallelism (the causal_lm recipe)"},
             {"megatron_lm_config.megatron_lm_tp_degree", "MEGATRON_LM_TP_DEGREE", "MegatronLMPlugin.tp_degree", "", R,
              Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_pp_degree", "MEGATRON_LM_PP_DEGREE", "MegatronLMPlugin.pp_degree", "", R,
              Startup, "*",
              "pipeline parallel degree: pipeline parallel training is out of scope; also part of "
              "distributed_type MEGATRON_LM, refused as a whole"},
             {"megatron_lm_config.megatron_lm_num_micro_batches", "MEGATRON_LM_NUM_MICRO_BATCHES",
              "MegatronLMPlugin.num_micro_batches", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_sequence_parallelism", "MEGATRON_LM_SEQUENCE_PARALLELISM",
              "MegatronLMPlugin.sequence_parallelism", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_recompute_activations", "MEGATRON_LM_RECOMPUTE_ACTIVATIONS",
              "MegatronLMPlugin.recompute_activations", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_use_distributed_optimizer", "MEGATRON_LM_USE_DISTRIBUTED_OPTIMIZER",
              "MegatronLMPlugin.use_distributed_optimizer", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_gradient_clipping", "MEGATRON_LM_GRADIENT_CLIPPING",
              "MegatronLMPlugin.gradient_clipping", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_use_custom_fsdp", "MEGATRON_LM_USE_CUSTOM_FSDP",
              "MegatronLMPlugin.use_custom_fsdp", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_no_load_optim", "MEGATRON_LM_NO_LOAD_OPTIM",
              "MegatronLMPlugin.no_load_optim", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_no_save_optim", "MEGATRON_LM_NO_SAVE_OPTIM",
              "MegatronLMPlugin.no_save_optim", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_eod_mask_loss", "MEGATRON_LM_EOD_MASK_LOSS",
              "MegatronLMPlugin.eod_mask_loss", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_optimizer_cpu_offload", "MEGATRON_LM_OPTIMIZER_CPU_OFFLOAD",
              "MegatronLMPlugin.optimizer_cpu_offload", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_use_precision_aware_optimizer",
              "MEGATRON_LM_USE_PRECISION_AWARE_OPTIMIZER", "MegatronLMPlugin.use_precision_aware_optimizer", "", R,
              Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_overlap_cpu_optimizer_d2h_h2d",
              "MEGATRON_LM_OVERLAP_CPU_OPTIMIZER_D2H_H2D", "MegatronLMPlugin.overlap_cpu_optimizer_d2h_h2d", "", R,
              Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_decoder_last_pipeline_num_layers",
              "MEGATRON_LM_DECODER_LAST_PIPELINE_NUM_LAYERS", "MegatronLMPlugin.decoder_last_pipeline_num_layers", "",
              R, Startup, "*", "layers of the last pipeline stage: pipeline parallel training is out of scope"},
             {"megatron_lm_config.megatron_lm_recompute_granularity", "MEGATRON_LM_RECOMPUTE_GRANULARITY",
              "MegatronLMPlugin.recompute_granularity", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_recompute_method", "MEGATRON_LM_RECOMPUTE_METHOD",
              "MegatronLMPlugin.recompute_method", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_recompute_num_layers", "MEGATRON_LM_RECOMPUTE_NUM_LAYERS",
              "MegatronLMPlugin.recompute_num_layers", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_attention_backend", "MEGATRON_LM_ATTENTION_BACKEND",
              "MegatronLMPlugin.attention_backend", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_expert_model_parallel_size", "MEGATRON_LM_EXPERT_MODEL_PARALLEL_SIZE",
              "MegatronLMPlugin.expert_model_parallel_size", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_expert_tensor_parallel_size", "MEGATRON_LM_EXPERT_TENSOR_PARALLEL_SIZE",
              "MegatronLMPlugin.expert_tensor_parallel_size", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_context_parallel_size", "MEGATRON_LM_CONTEXT_PARALLEL_SIZE",
              "MegatronLMPlugin.context_parallel_size", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_attention_dropout", "MEGATRON_LM_ATTENTION_DROPOUT",
              "MegatronLMPlugin.attention_dropout", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_hidden_dropout", "MEGATRON_LM_HIDDEN_DROPOUT",
              "MegatronLMPlugin.hidden_dropout", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_attention_softmax_in_fp32", "MEGATRON_LM_ATTENTION_SOFTMAX_IN_FP32",
              "MegatronLMPlugin.attention_softmax_in_fp32", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_calculate_per_token_loss", "MEGATRON_LM_CALCULATE_PER_TOKEN_LOSS",
              "MegatronLMPlugin.calculate_per_token_loss", "", R, Startup, "*", kMegatron},
             {"megatron_lm_config.megatron_lm_use_rotary_position_embeddings",
              "MEGATRON_LM_USE_ROTARY_POSITION_EMBEDDINGS", "MegatronLMPlugin.use_rotary_position_embeddings", "", R,
              Startup, "*", kMegatron},
             {"", "",
              "MegatronLMPlugin.pipeline_model_parallel_split_rank "
              "MegatronLMPlugin.num_layers_per_virtual_pipeline_stage",
              "", P, None, "", "pipeline stages: pipeline parallel training is out of scope"},
             {"", "",
              "MegatronLMPlugin.is_train_batch_min MegatronLMPlugin.train_iters MegatronLMPlugin.train_samples "
              "MegatronLMPlugin.weight_decay_incr_style MegatronLMPlugin.start_weight_decay "
              "MegatronLMPlugin.end_weight_decay MegatronLMPlugin.lr_decay_style MegatronLMPlugin.lr_decay_iters "
              "MegatronLMPlugin.lr_decay_samples MegatronLMPlugin.lr_warmup_iters MegatronLMPlugin.lr_warmup_samples "
              "MegatronLMPlugin.lr_warmup_fraction MegatronLMPlugin.min_lr MegatronLMPlugin.consumed_samples "
              "MegatronLMPlugin.no_wd_decay_cond MegatronLMPlugin.scale_lr_cond MegatronLMPlugin.lr_mult "
              "MegatronLMPlugin.megatron_dataset_flag MegatronLMPlugin.seq_length MegatronLMPlugin.encoder_seq_length "
              "MegatronLMPlugin.decoder_seq_length MegatronLMPlugin.tensorboard_dir "
              "MegatronLMPlugin.set_all_logging_options MegatronLMPlugin.eval_iters MegatronLMPlugin.eval_interval "
              "MegatronLMPlugin.return_logits MegatronLMPlugin.custom_train_step_class "
              "MegatronLMPlugin.custom_train_step_kwargs MegatronLMPlugin.custom_model_provider_function "
              "MegatronLMPlugin.custom_prepare_model_function "
              "MegatronLMPlugin.custom_megatron_datasets_provider_function MegatronLMPlugin.custom_get_batch_function "
              "MegatronLMPlugin.custom_loss_function MegatronLMPlugin.other_megatron_args",
              "", P, None, "",
              "Megatron-LM's training loop settings, set in Python only; distributed_type MEGATRON_LM is refused as "
              "a whole"},
         }},
        {"fp8_config",
         {
             {"fp8_config.backend", accelerateenv::kFp8Backend, "FP8RecipeKwargs.backend DeepSpeedPlugin.enable_msamp",
              "", A, Fp8, "", "AO, TE or MSAMP: the FP8 recipe (docs/fp8.md)"},
             {"fp8_config.fp8_format", accelerateenv::kFp8Format,
              "TERecipeKwargs.fp8_format FP8RecipeKwargs.fp8_format", "", A, Fp8, "",
              "TE: HYBRID or E4M3 (E5M2 is refused)"},
             {"fp8_config.margin", accelerateenv::kFp8Margin, "TERecipeKwargs.margin FP8RecipeKwargs.margin", "", A,
              Fp8, "", "TE: the scaling factor's margin"},
             {"fp8_config.interval", accelerateenv::kFp8Interval, "TERecipeKwargs.interval FP8RecipeKwargs.interval",
              "", A, Fp8, "", "TE: steps between scaling factor updates"},
             {"fp8_config.amax_history_len", accelerateenv::kFp8AmaxHistoryLen,
              "TERecipeKwargs.amax_history_len FP8RecipeKwargs.amax_history_len", "", A, Fp8, "",
              "TE: the amax history's length"},
             {"fp8_config.amax_history_length", accelerateenv::kFp8AmaxHistoryLength, "", "", A, Fp8, "",
              "the questionnaire's spelling of amax_history_len, read when that is unset (accel launch notes that "
              "Accelerate's recipes ignore it)"},
             {"fp8_config.amax_compute_algo", accelerateenv::kFp8AmaxComputeAlgo,
              "TERecipeKwargs.amax_compute_algo FP8RecipeKwargs.amax_compute_algo", "", A, Fp8, "",
              "TE: max or most_recent"},
             {"fp8_config.amax_compute_algorithm", accelerateenv::kFp8AmaxComputeAlgorithm, "", "", A, Fp8, "",
              "the questionnaire's spelling of amax_compute_algo, read when that is unset"},
             {"fp8_config.override_linear_precision", rowProse().fp8Overrides.c_str(),
              "TERecipeKwargs.override_linear_precision FP8RecipeKwargs.override_linear_precision", "", A, Fp8, "",
              "TE: the weight gradient's GEMM in higher precision (wgrad); fprop and dgrad true are refused"},
             {"fp8_config.use_autocast_during_eval", accelerateenv::kFp8UseAutocastDuringEval,
              "TERecipeKwargs.use_autocast_during_eval FP8RecipeKwargs.use_autocast_during_eval", "", A, Fp8, "",
              "evaluation runs the FP8 recipe too"},
             {"fp8_config.opt_level", accelerateenv::kFp8OptLevel,
              "MSAMPRecipeKwargs.opt_level FP8RecipeKwargs.opt_level DeepSpeedPlugin.msamp_opt_level", "", A, Fp8, "",
              "MS-AMP: O1 or O2"},
             {"fp8_config.optimization_level", accelerateenv::kFp8OptimizationLevel, "", "", A, Fp8, "",
              "the questionnaire's spelling of opt_level, read when that is unset"},
             {"fp8_config.enable_fsdp_float8_all_gather", accelerateenv::kFp8EnableFsdpFloat8AllGather,
              "AORecipeKwargs.enable_fsdp_float8_all_gather", "", A, Fp8, "",
              "AO under FSDP2: shards are all-gathered as FP8 codes"},
             {"fp8_config.pad_inner_dim", accelerateenv::kFp8PadInnerDim, "AORecipeKwargs.pad_inner_dim", "", A, Fp8,
              "", "AO: inner dimensions padded to 16"},
             {"", accelerateenv::kFp8UseMxfp8BlockScaling,
              "TERecipeKwargs.use_mxfp8_block_scaling FP8RecipeKwargs.use_mxfp8_block_scaling", "", R, Fp8, "false",
              "true is refused: MXFP8 block scaling is not implemented"},
             {"", "", "AORecipeKwargs.config AORecipeKwargs.module_filter_func", "", P, None, "",
              "torchao's Python objects; a native job converts every Linear layer with the AO recipe's settings"},
         }},
        {"parallelism_config",
         {
             {"", accelerateenv::kUseParallelismConfig, "", "", A, Startup, "",
              "true: the PARALLELISM_CONFIG_* sizes are checked against the world size (below)"},
             {"parallelism_config.parallelism_config_dp_shard_size", "PARALLELISM_CONFIG_DP_SHARD_SIZE",
              "ParallelismConfig.dp_shard_size", "", A, Startup, "",
              "the device mesh's dp_shard dimension: under FSDP2, FSDP2 over the ranks that differ only in it "
              "(every rank, or every tp group's counterparts; with dp_replicate_size above 1, HSDP: inside each "
              "replica). Any other composition is refused, naming the sizes (sizes whose product is not the world "
              "size, or without FSDP2)"},
             {"parallelism_config.parallelism_config_dp_replicate_size", "PARALLELISM_CONFIG_DP_REPLICATE_SIZE",
              "ParallelismConfig.dp_replicate_size", "", A, Startup, "",
              "the device mesh's dp_replicate dimension without FSDP: DDP over the ranks that differ only in it. "
              "With dp_shard_size above 1 under FSDP2 (HSDP): FSDP2 shards over dp_shard and averages the "
              "gradients over dp_replicate too (refused without FSDP2); under FSDP2 alone it is refused as "
              "Accelerate does (no dimension to shard over)"},
             {"parallelism_config.parallelism_config_tp_size", "PARALLELISM_CONFIG_TP_SIZE",
              "ParallelismConfig.tp_size", "", A, Startup, "",
              "the device mesh's tp dimension (the last): the causal_lm recipe splits Llama-like models as "
              "transformers' tensor-parallel plan does (q/k/v, gate, up column-wise; o, down row-wise), the tp "
              "ranks reading the same samples. Refused naming the sizes when it does not divide the world size or "
              "num_attention_heads, num_key_value_heads and intermediate_size; refused for other recipes and "
              "families, with fp8, and with LoRA on the row-wise layers with dropout or mixed precision"},
             {"parallelism_config.parallelism_config_cp_size", "PARALLELISM_CONFIG_CP_SIZE",
              "ParallelismConfig.cp_size", "", A, Startup, "",
              "the device mesh's cp dimension (before tp): the causal_lm recipe shards every sequence over the cp "
              "ranks (2 x cp_size chunks, rank r holding chunks r and 2 x cp_size - 1 - r) with exact ring "
              "attention, RoPE positions of the whole sequence and the loss of the whole sequence; the cp ranks read "
              "the same samples. Refused naming the sizes when cp_size x tp_size does not divide the world size; "
              "refused for other recipes and non-Llama families, with fp8 and attention dropout"},
             {"parallelism_config.parallelism_config_cp_comm_strategy", "PARALLELISM_CONFIG_CP_COMM_STRATEGY",
              "TorchContextParallelConfig.cp_comm_strategy", "", A, Startup, "",
              "with cp_size above 1, how the cp ranks exchange keys and values: allgather (Accelerate's default: "
              "the whole sequence's keys and values gathered at once) or alltoall (a ring of cp_size steps, each "
              "rank passing its block to the next); anything else is refused"},
             {"parallelism_config.parallelism_config_cp_backend", "PARALLELISM_CONFIG_CP_BACKEND",
              "ParallelismConfig.cp_backend", "", M, Startup, "torch,none",
              "the context-parallel backend: Accelerate's only one is torch, which the native ring attention "
              "replaces; another value has no effect"},
             {"parallelism_config.parallelism_config_sp_size", "PARALLELISM_CONFIG_SP_SIZE",
              "ParallelismConfig.sp_size", "", R, Startup, "1,none",
              "above 1 is refused: sequence parallelism (DeepSpeed ALST/Ulysses) is not implemented by the native "
              "runtime; set sp_size: 1"},
             {"parallelism_config.parallelism_config_sp_backend", "PARALLELISM_CONFIG_SP_BACKEND",
              "ParallelismConfig.sp_backend", "", M, Startup, "deepspeed,none",
              "the sequence-parallel backend: without sequence parallelism (sp_size 1) it has no effect"},
             {"parallelism_config.parallelism_config_sp_seq_length", "PARALLELISM_CONFIG_SP_SEQ_LENGTH",
              "DeepSpeedSequenceParallelConfig.sp_seq_length", "", R, Startup, "*",
              "exported with sp_size above 1, which is refused"},
             {"parallelism_config.parallelism_config_sp_seq_length_is_variable",
              "PARALLELISM_CONFIG_SP_SEQ_LENGTH_IS_VARIABLE",
              "DeepSpeedSequenceParallelConfig.sp_seq_length_is_variable", "", R, Startup, "*",
              "exported with sp_size above 1, which is refused"},
             {"parallelism_config.parallelism_config_sp_attn_implementation",
              "PARALLELISM_CONFIG_SP_ATTN_IMPLEMENTATION", "DeepSpeedSequenceParallelConfig.sp_attn_implementation", "",
              R, Startup, "*", "exported with sp_size above 1, which is refused"},
             {"", "",
              "ParallelismConfig.tp_handler ParallelismConfig.cp_handler ParallelismConfig.sp_handler "
              "TorchTensorParallelConfig.enable_async_tp",
              "", P, None, "", "the handlers of tensor, context and sequence parallelism, which are refused"},
         }},
        {"mpirun_config and ipex_config",
         {
             {"mpirun_config.mpirun_hostfile", "", "", "", A, Launch, "",
              "accel launch starts every local rank itself with torchrun's variables and notes that the config's "
              "hostfile is not used; the --mpirun_hostfile flag launches on the file's hosts over SSH "
              "(docs/remote.md)"},
             {"mpirun_config.mpirun_ccl", "", "", "", M, Launch, "",
              "oneCCL workers of Accelerate 1.0's MPI launch (removed in Accelerate 1.13); the runtime uses gloo"},
             {"ipex_config.ipex", "", "", "", M, Launch, "false",
              "Intel Extension for PyTorch (removed in Accelerate 1.13): libtorch runs without it"},
             {"ipex_config.use_xpu", "", "", "", M, Launch, "false",
              "Intel XPUs through IPEX (removed in Accelerate 1.13): the runtime runs on CPUs and CUDA GPUs"},
         }},
        {"Variables accel launch sets for every rank",
         {
             {"", "RANK", "", "", A, Runtime, "", "the rank's global index"},
             {"", "LOCAL_RANK", "", "", A, Runtime, "", "the rank's index on its machine (its GPU on CUDA ranks)"},
             {"", "LOCAL_WORLD_SIZE", "", "", A, Runtime, "",
              "ranks on this machine: threads per rank and the shared-memory collectives"},
             {"", "GROUP_RANK GROUP_WORLD_SIZE ROLE_NAME ROLE_RANK ROLE_WORLD_SIZE", "", "", M, Launch, "*",
              kTorchrunAgent},
             {"", "TORCHELASTIC_RESTART_COUNT", "", "", A, Runtime, "",
              "the attempt: a restarted group rendezvous under keys of its own"},
             {"", "TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID", "", "", M, Launch, "*",
              "torchrun's; accel launch restarts the group itself (--max_restarts)"},
             {"", "TORCHELASTIC_USE_AGENT_STORE", "", "", A, Runtime, "",
              "False: rank 0 hosts the TCPStore (accel launch has no agent)"},
             {"", "TORCHELASTIC_ERROR_FILE", "", "", M, Launch, "*",
              "written by torchelastic's Python error handler; accel-worker prints its error in its log"},
             {"", "TORCH_NCCL_ASYNC_ERROR_HANDLING NCCL_ASYNC_ERROR_HANDLING", "", "", A, Runtime, "",
              "read by libtorch's NCCL process group on CUDA ranks"},
             {"", "OMP_NUM_THREADS", "", "", A, Runtime, "", "the rank's intra-op threads (at::set_num_threads)"},
             {"", "KMP_AFFINITY KMP_BLOCKTIME", "", "", M, Launch, "*",
              "read by Intel's OpenMP runtime only; libtorch's wheel uses GNU OpenMP (libgomp), which ignores them"},
             {"",
              "ZE_AFFINITY_MASK MLU_VISIBLE_DEVICES SDAA_VISIBLE_DEVICES MUSA_VISIBLE_DEVICES "
              "ASCEND_RT_VISIBLE_DEVICES HABANA_VISIBLE_MODULES NEURON_RT_VISIBLE_CORES",
              "", "", R, Launch, "*",
              "the device masks of other accelerators: their distributed types are refused for a job"},
             {"", "ACCEL_RUN_DIR ACCEL_METRICS_FILE", "", "", A, Runtime, "",
              "where the rank writes its metrics (docs/run-directory.md)"},
             {"", "ACCEL_STORE_LISTEN_FD", "", "", A, Runtime, "",
              "rank 0's TCPStore listens on the socket accel launch opened"},
             {"", "ACCEL_RUN_TOKEN", "", "", A, Launch, "",
              "accel launch finds every process of the run by it when it stops the run"},
             {"", "GLOO_SOCKET_IFNAME", "", "", A, Runtime, "",
              "the network interface of gloo's connections (set by accel hosts launch's pre-flight)"},
         }},
    };
}

} // namespace

const std::vector<Section> &sections()
{
    static const std::vector<Section> table = makeSections();
    return table;
}

} // namespace accel::config::native
