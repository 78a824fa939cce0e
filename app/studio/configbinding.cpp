#include "app/studio/configbinding.h"

#include "app/studio/configvaluetext.h"

namespace accel::app {

namespace {
using config::ClusterConfig;
using configtext::bind;
using Kind = FieldSpec::Kind;

FieldSpec choice(const char *key, const QString &label, QStringList choices, const QString &toolTip = {})
{
    return {QString::fromLatin1(key), label, Kind::Choice, std::move(choices), true, 0, 0, toolTip};
}
FieldSpec flag(const char *key, const QString &label, const QString &toolTip = {})
{
    return {QString::fromLatin1(key), label, Kind::Bool, {}, true, 0, 0, toolTip};
}
FieldSpec number(const char *key, const QString &label, int minimum, int maximum, const QString &toolTip = {})
{
    return {QString::fromLatin1(key), label, Kind::Int, {}, true, minimum, maximum, toolTip};
}
FieldSpec text(const char *key, const QString &label, const QString &toolTip = {})
{
    return {QString::fromLatin1(key), label, Kind::Text, {}, true, 0, 0, toolTip};
}

QStringList distributedTypeNames()
{
    QStringList names;
    for (int i = static_cast<int>(config::DistributedType::No);
         i <= static_cast<int>(config::DistributedType::ModelParallel); ++i)
        names << QString::fromLatin1(config::toString(static_cast<config::DistributedType>(i)));
    return names;
}

FieldBinding computeEnvironmentField()
{
    FieldSpec spec = choice("compute_environment", QObject::tr("Compute environment"),
                            {QStringLiteral("LOCAL_MACHINE"), QStringLiteral("AMAZON_SAGEMAKER")});
    spec.optional = false;
    return {spec,
            [](const ClusterConfig &c) {
                return std::optional<QString>(QString::fromLatin1(config::toString(c.computeEnvironment)));
            },
            [](ClusterConfig &c, const std::optional<QString> &value) {
                const auto parsed = config::computeEnvironmentFromString(value.value_or(QString()).toStdString());
                if (!parsed)
                    return QStringLiteral("expected LOCAL_MACHINE or AMAZON_SAGEMAKER");
                c.computeEnvironment = *parsed;
                return QString();
            }};
}

FieldBinding distributedTypeField()
{
    FieldSpec spec =
        choice("distributed_type", QObject::tr("Distributed type"), distributedTypeNames(),
               QObject::tr("NO: one process; MULTI_CPU / MULTI_GPU: data parallel; FSDP and DEEPSPEED: sharded"));
    spec.optional = false;
    return {spec,
            [](const ClusterConfig &c) {
                return std::optional<QString>(QString::fromLatin1(config::toString(c.distributedType)));
            },
            [](ClusterConfig &c, const std::optional<QString> &value) {
                const auto parsed = config::distributedTypeFromString(value.value_or(QString()).toStdString());
                if (!parsed)
                    return QStringLiteral("expected one of %1").arg(distributedTypeNames().join(QStringLiteral(", ")));
                c.distributedType = *parsed;
                return QString();
            }};
}

FieldBinding mixedPrecisionField()
{
    return {choice("mixed_precision", QObject::tr("Mixed precision"),
                   {QStringLiteral("no"), QStringLiteral("fp16"), QStringLiteral("bf16"), QStringLiteral("fp8")}),
            [](const ClusterConfig &c) {
                return c.mixedPrecision
                           ? std::optional<QString>(QString::fromLatin1(config::toString(*c.mixedPrecision)))
                           : std::nullopt;
            },
            [](ClusterConfig &c, const std::optional<QString> &value) {
                if (!value) {
                    c.mixedPrecision.reset();
                    return QString();
                }
                const auto parsed = config::mixedPrecisionFromString(value->toStdString());
                if (!parsed)
                    return QStringLiteral("expected one of no, fp16, bf16, fp8; got '%1'").arg(*value);
                c.mixedPrecision = *parsed;
                return QString();
            }};
}

const QStringList fsdpStrategies = {QStringLiteral("FULL_SHARD"), QStringLiteral("SHARD_GRAD_OP"),
                                    QStringLiteral("NO_SHARD"), QStringLiteral("HYBRID_SHARD"),
                                    QStringLiteral("HYBRID_SHARD_ZERO2")};
const QStringList offloadDevices = {QStringLiteral("none"), QStringLiteral("cpu"), QStringLiteral("nvme")};

std::vector<FieldGroup> buildGroups()
{
    using config::DeepSpeedConfig;
    using config::DynamoConfig;
    using config::Fp8Config;
    using config::FsdpConfig;
    using config::MpirunConfig;
    const int intMax = 2147483647;
    std::vector<FieldGroup> groups;

    groups.push_back(
        {QObject::tr("General and topology"),
         QStringLiteral("group:general"),
         0,
         {
             computeEnvironmentField(),
             distributedTypeField(),
             bind(number("num_processes", QObject::tr("Processes (all machines)"), -1, 1 << 20,
                         QObject::tr("-1: the number must be given at launch")),
                  &ClusterConfig::numProcesses),
             bind(number("num_machines", QObject::tr("Machines"), 1, 1 << 16), &ClusterConfig::numMachines),
             bind(number("machine_rank", QObject::tr("This machine's rank"), 0, 1 << 16), &ClusterConfig::machineRank),
             bind(text("gpu_ids", QObject::tr("GPU ids"), QObject::tr("all, or a comma list such as 0,1,3")),
                  &ClusterConfig::gpuIds),
             bind(flag("use_cpu", QObject::tr("Force CPU")), &ClusterConfig::useCpu),
             bind(flag("enable_cpu_affinity", QObject::tr("CPU affinity (NUMA)")), &ClusterConfig::enableCpuAffinity),
             bind(flag("debug", QObject::tr("Debug checks")), &ClusterConfig::debug),
             bind(text("main_training_function", QObject::tr("Main training function")),
                  &ClusterConfig::mainTrainingFunction),
         }});

    groups.push_back(
        {QObject::tr("Mixed precision and FP8"),
         QStringLiteral("group:precision"),
         1,
         {
             mixedPrecisionField(),
             bind(text("downcast_bf16", QObject::tr("Downcast bf16 (XLA)"), QObject::tr("'no', true or false")),
                  &ClusterConfig::downcastBf16),
             bind(choice("fp8_config.backend", QObject::tr("FP8 backend"),
                         {QStringLiteral("AO"), QStringLiteral("TE"), QStringLiteral("MSAMP")}),
                  &ClusterConfig::fp8, &Fp8Config::backend),
             bind(choice("fp8_config.fp8_format", QObject::tr("FP8 format (TE)"),
                         {QStringLiteral("HYBRID"), QStringLiteral("E4M3"), QStringLiteral("E5M2")}),
                  &ClusterConfig::fp8, &Fp8Config::fp8Format),
             bind(number("fp8_config.margin", QObject::tr("Scaling margin (TE)"), 0, 64), &ClusterConfig::fp8,
                  &Fp8Config::margin),
             bind(number("fp8_config.interval", QObject::tr("Scaling interval (TE)"), 1, 1 << 20), &ClusterConfig::fp8,
                  &Fp8Config::interval),
             bind(number("fp8_config.amax_history_length", QObject::tr("Amax history length (TE)"), 1, 1 << 20),
                  &ClusterConfig::fp8, &Fp8Config::amaxHistoryLength),
             bind(choice("fp8_config.amax_compute_algorithm", QObject::tr("Amax algorithm (TE)"),
                         {QStringLiteral("max"), QStringLiteral("most_recent")}),
                  &ClusterConfig::fp8, &Fp8Config::amaxComputeAlgorithm),
             bind(flag("fp8_config.use_autocast_during_eval", QObject::tr("Autocast during eval (TE)")),
                  &ClusterConfig::fp8, &Fp8Config::useAutocastDuringEval),
             bind(choice("fp8_config.optimization_level", QObject::tr("Optimization level (MS-AMP)"),
                         {QStringLiteral("O1"), QStringLiteral("O2")}),
                  &ClusterConfig::fp8, &Fp8Config::optimizationLevel),
             bind(flag("fp8_config.enable_fsdp_float8_all_gather", QObject::tr("FSDP float8 all-gather (AO)")),
                  &ClusterConfig::fp8, &Fp8Config::enableFsdpFloat8AllGather),
             bind(flag("fp8_config.pad_inner_dim", QObject::tr("Pad inner dimension (AO)")), &ClusterConfig::fp8,
                  &Fp8Config::padInnerDim),
         }});

    QStringList reshardChoices = {QStringLiteral("true"), QStringLiteral("false")};
    reshardChoices += fsdpStrategies;
    groups.push_back(
        {QObject::tr("FSDP"),
         QStringLiteral("group:fsdp"),
         0,
         {
             bind(number("fsdp_config.fsdp_version", QObject::tr("Version"), 1, 2), &ClusterConfig::fsdp,
                  &FsdpConfig::version),
             bind(choice("fsdp_config.fsdp_reshard_after_forward", QObject::tr("Reshard after forward"), reshardChoices,
                         QObject::tr("FSDP2: true or false; FSDP1: a sharding strategy")),
                  &ClusterConfig::fsdp, &FsdpConfig::reshardAfterForward),
             bind(
                 choice("fsdp_config.fsdp_sharding_strategy", QObject::tr("Sharding strategy (FSDP1)"), fsdpStrategies),
                 &ClusterConfig::fsdp, &FsdpConfig::shardingStrategy),
             bind(flag("fsdp_config.fsdp_offload_params", QObject::tr("Offload parameters to CPU")),
                  &ClusterConfig::fsdp, &FsdpConfig::offloadParams),
             bind(choice("fsdp_config.fsdp_auto_wrap_policy", QObject::tr("Auto wrap policy"),
                         {QStringLiteral("TRANSFORMER_BASED_WRAP"), QStringLiteral("SIZE_BASED_WRAP"),
                          QStringLiteral("NO_WRAP")}),
                  &ClusterConfig::fsdp, &FsdpConfig::autoWrapPolicy),
             bind(text("fsdp_config.fsdp_transformer_layer_cls_to_wrap", QObject::tr("Layer classes to wrap"),
                       QObject::tr("comma-separated class names")),
                  &ClusterConfig::fsdp, &FsdpConfig::transformerLayerClsToWrap),
             bind(number("fsdp_config.fsdp_min_num_params", QObject::tr("Min parameters per wrap"), 0, intMax),
                  &ClusterConfig::fsdp, &FsdpConfig::minNumParams),
             bind(choice(
                      "fsdp_config.fsdp_backward_prefetch", QObject::tr("Backward prefetch (FSDP1)"),
                      {QStringLiteral("BACKWARD_PRE"), QStringLiteral("BACKWARD_POST"), QStringLiteral("NO_PREFETCH")}),
                  &ClusterConfig::fsdp, &FsdpConfig::backwardPrefetch),
             bind(choice("fsdp_config.fsdp_state_dict_type", QObject::tr("State dict type"),
                         {QStringLiteral("FULL_STATE_DICT"), QStringLiteral("LOCAL_STATE_DICT"),
                          QStringLiteral("SHARDED_STATE_DICT")}),
                  &ClusterConfig::fsdp, &FsdpConfig::stateDictType),
             bind(flag("fsdp_config.fsdp_forward_prefetch", QObject::tr("Forward prefetch (FSDP1)")),
                  &ClusterConfig::fsdp, &FsdpConfig::forwardPrefetch),
             bind(flag("fsdp_config.fsdp_use_orig_params", QObject::tr("Use original parameters (FSDP1)")),
                  &ClusterConfig::fsdp, &FsdpConfig::useOrigParams),
             bind(flag("fsdp_config.fsdp_cpu_ram_efficient_loading", QObject::tr("CPU-RAM-efficient loading")),
                  &ClusterConfig::fsdp, &FsdpConfig::cpuRamEfficientLoading),
             bind(flag("fsdp_config.fsdp_sync_module_states", QObject::tr("Sync module states (FSDP1)")),
                  &ClusterConfig::fsdp, &FsdpConfig::syncModuleStates),
             bind(flag("fsdp_config.fsdp_activation_checkpointing", QObject::tr("Activation checkpointing")),
                  &ClusterConfig::fsdp, &FsdpConfig::activationCheckpointing),
             bind(text("fsdp_config.fsdp_ignored_modules", QObject::tr("Ignored modules (regex)")),
                  &ClusterConfig::fsdp, &FsdpConfig::ignoredModules),
         }});

    groups.push_back(
        {QObject::tr("DeepSpeed"),
         QStringLiteral("group:deepspeed"),
         1,
         {
             bind(text("deepspeed_config.deepspeed_config_file", QObject::tr("DeepSpeed JSON file")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::deepspeedConfigFile),
             bind(number("deepspeed_config.zero_stage", QObject::tr("ZeRO stage"), 0, 3), &ClusterConfig::deepspeed,
                  &DeepSpeedConfig::zeroStage),
             bind(choice("deepspeed_config.offload_optimizer_device", QObject::tr("Offload optimizer to"),
                         offloadDevices),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadOptimizerDevice),
             bind(choice("deepspeed_config.offload_param_device", QObject::tr("Offload parameters to"), offloadDevices),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadParamDevice),
             bind(text("deepspeed_config.offload_optimizer_nvme_path", QObject::tr("Optimizer NVMe path")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadOptimizerNvmePath),
             bind(text("deepspeed_config.offload_param_nvme_path", QObject::tr("Parameter NVMe path")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadParamNvmePath),
             bind(number("deepspeed_config.gradient_accumulation_steps", QObject::tr("Gradient accumulation"), 1,
                         1 << 20),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::gradientAccumulationSteps),
             bind(text("deepspeed_config.gradient_clipping", QObject::tr("Gradient clipping"),
                       QObject::tr("a number such as 1.0")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::gradientClipping),
             bind(flag("deepspeed_config.zero3_save_16bit_model", QObject::tr("16-bit save (ZeRO-3)")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::zero3Save16bitModel),
             bind(flag("deepspeed_config.zero3_init_flag", QObject::tr("zero.Init (ZeRO-3)")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::zero3InitFlag),
             bind(text("deepspeed_config.deepspeed_moe_layer_cls_names", QObject::tr("MoE layer classes")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::moeLayerClsNames),
             bind(choice("deepspeed_config.deepspeed_multinode_launcher", QObject::tr("Multi-node launcher"),
                         {QStringLiteral("pdsh"), QStringLiteral("standard"), QStringLiteral("openmpi"),
                          QStringLiteral("mvapich"), QStringLiteral("mpich"), QStringLiteral("nossh"),
                          QStringLiteral("slurm")}),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::multinodeLauncher),
             bind(text("deepspeed_config.deepspeed_hostfile", QObject::tr("Hostfile")), &ClusterConfig::deepspeed,
                  &DeepSpeedConfig::hostfile),
             bind(text("deepspeed_config.deepspeed_exclusion_filter", QObject::tr("Exclusion filter")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::exclusionFilter),
             bind(text("deepspeed_config.deepspeed_inclusion_filter", QObject::tr("Inclusion filter")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::inclusionFilter),
         }});

    groups.push_back(
        {QObject::tr("Dynamo (torch.compile)"),
         QStringLiteral("group:dynamo"),
         1,
         {
             bind(choice("dynamo_config.dynamo_backend", QObject::tr("Backend"),
                         {QStringLiteral("NO"), QStringLiteral("EAGER"), QStringLiteral("AOT_EAGER"),
                          QStringLiteral("INDUCTOR"), QStringLiteral("AOT_TS_NVFUSER"),
                          QStringLiteral("NVPRIMS_NVFUSER"), QStringLiteral("CUDAGRAPHS"), QStringLiteral("OFI"),
                          QStringLiteral("FX2TRT"), QStringLiteral("ONNXRT"), QStringLiteral("TENSORRT"),
                          QStringLiteral("AOT_TORCHXLA_TRACE_ONCE"), QStringLiteral("TORCHXLA_TRACE_ONCE"),
                          QStringLiteral("TVM"), QStringLiteral("HPU_BACKEND")}),
                  &ClusterConfig::dynamo, &DynamoConfig::backend),
             bind(
                 choice("dynamo_config.dynamo_mode", QObject::tr("Mode"),
                        {QStringLiteral("default"), QStringLiteral("reduce-overhead"), QStringLiteral("max-autotune")}),
                 &ClusterConfig::dynamo, &DynamoConfig::mode),
             bind(flag("dynamo_config.dynamo_use_fullgraph", QObject::tr("Full graph")), &ClusterConfig::dynamo,
                  &DynamoConfig::useFullgraph),
             bind(flag("dynamo_config.dynamo_use_dynamic", QObject::tr("Dynamic shapes")), &ClusterConfig::dynamo,
                  &DynamoConfig::useDynamic),
             bind(flag("dynamo_config.dynamo_use_regional_compilation", QObject::tr("Regional compilation")),
                  &ClusterConfig::dynamo, &DynamoConfig::useRegionalCompilation),
         }});

    groups.push_back(
        {QObject::tr("Multi-node"),
         QStringLiteral("group:multinode"),
         0,
         {
             bind(text("main_process_ip", QObject::tr("Main process IP")), &ClusterConfig::mainProcessIp),
             bind(number("main_process_port", QObject::tr("Main process port"), 0, 65535,
                         QObject::tr("0: pick a free port")),
                  &ClusterConfig::mainProcessPort),
             bind(choice("rdzv_backend", QObject::tr("Rendezvous backend"),
                         {QStringLiteral("static"), QStringLiteral("c10d"), QStringLiteral("etcd"),
                          QStringLiteral("etcd-v2")}),
                  &ClusterConfig::rdzvBackend),
             bind(flag("same_network", QObject::tr("Machines on the same network")), &ClusterConfig::sameNetwork),
             bind(text("mpirun_config.mpirun_hostfile", QObject::tr("mpirun hostfile")), &ClusterConfig::mpirun,
                  &MpirunConfig::mpirunHostfile),
         }});
    return groups;
}
} // namespace

const std::vector<FieldGroup> &configFieldGroups()
{
    static const std::vector<FieldGroup> groups = buildGroups();
    return groups;
}

} // namespace accel::app
