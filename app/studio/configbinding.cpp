#include "app/studio/configbinding.h"

#include "app/studio/configvaluetext.h"

#include "core/config/configschema.h"

#include <algorithm>
#include <cstdint>

namespace accel::app {

namespace {
using config::ClusterConfig;
using configtext::bind;
using configtext::bindEitherSpelling;
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

// Choices and ranges of the keys the config schema declares (core/config/configschema.h, the one
// table the reader, writer, questionnaire and launch flags use): the form offers what the reader
// accepts.
const config::schema::KeyRule &rule(const char *key)
{
    static const config::schema::KeyRule none;
    const config::schema::KeyRule *found = config::schema::keyRule(key);
    Q_ASSERT_X(found, "configbinding", key);
    return found ? *found : none;
}

QStringList qtList(const std::vector<std::string> &values)
{
    QStringList list;
    for (const std::string &value : values)
        list << QString::fromStdString(value);
    return list;
}

QStringList schemaChoices(const char *key)
{
    return qtList(rule(key).choices.values);
}

FieldSpec schemaChoice(const char *key, const QString &label, const QString &toolTip = {})
{
    return choice(key, label, schemaChoices(key), toolTip);
}

FieldSpec schemaNumber(const char *key, const QString &label, const QString &toolTip = {})
{
    const config::schema::Range &range = rule(key).range;
    const std::int64_t intMax = 2147483647;
    return number(key, label, static_cast<int>(std::max<std::int64_t>(range.minimum.value_or(-intMax), -intMax)),
                  static_cast<int>(std::min<std::int64_t>(range.maximum.value_or(intMax), intMax)), toolTip);
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
    return {
        choice("mixed_precision", QObject::tr("Mixed precision"), qtList(config::schema::mixedPrecisionNames())),
        [](const ClusterConfig &c) {
            return c.mixedPrecision ? std::optional<QString>(QString::fromLatin1(config::toString(*c.mixedPrecision)))
                                    : std::nullopt;
        },
        [](ClusterConfig &c, const std::optional<QString> &value) {
            if (!value) {
                c.mixedPrecision.reset();
                return QString();
            }
            const auto parsed = config::mixedPrecisionFromString(value->toStdString());
            if (!parsed)
                return QStringLiteral("expected one of %1; got '%2'")
                    .arg(QString::fromStdString(config::schema::joined(config::schema::mixedPrecisionNames())), *value);
            c.mixedPrecision = *parsed;
            return QString();
        }};
}

std::vector<FieldGroup> buildGroups()
{
    using config::DeepSpeedConfig;
    using config::DynamoConfig;
    using config::Fp8Config;
    using config::FsdpConfig;
    using config::MpirunConfig;
    std::vector<FieldGroup> groups;

    groups.push_back(
        {QObject::tr("General and topology"),
         QStringLiteral("group:general"),
         0,
         {
             computeEnvironmentField(),
             distributedTypeField(),
             bind(schemaNumber("num_processes", QObject::tr("Processes (all machines)"),
                               QObject::tr("-1: the number must be given at launch")),
                  &ClusterConfig::numProcesses),
             bind(schemaNumber("num_machines", QObject::tr("Machines")), &ClusterConfig::numMachines),
             bind(schemaNumber("machine_rank", QObject::tr("This machine's rank")), &ClusterConfig::machineRank),
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
             bind(schemaChoice("fp8_config.backend", QObject::tr("FP8 backend")), &ClusterConfig::fp8,
                  &Fp8Config::backend),
             bind(schemaChoice("fp8_config.fp8_format", QObject::tr("FP8 format (TE)")), &ClusterConfig::fp8,
                  &Fp8Config::fp8Format),
             bind(schemaNumber("fp8_config.margin", QObject::tr("Scaling margin (TE)")), &ClusterConfig::fp8,
                  &Fp8Config::margin),
             bind(schemaNumber("fp8_config.interval", QObject::tr("Scaling interval (TE)")), &ClusterConfig::fp8,
                  &Fp8Config::interval),
             // The keys Accelerate's FP8 recipes read; a file's questionnaire spelling
             // (amax_history_length, amax_compute_algorithm, optimization_level) shows in the
             // same field and is replaced by the working one when the field is edited.
             bindEitherSpelling(schemaNumber("fp8_config.amax_history_len", QObject::tr("Amax history length (TE)"),
                                             QObject::tr("also shows amax_history_length, which has no effect")),
                                &ClusterConfig::fp8, &Fp8Config::amaxHistoryLen, &Fp8Config::amaxHistoryLength),
             bindEitherSpelling(schemaChoice("fp8_config.amax_compute_algo", QObject::tr("Amax algorithm (TE)"),
                                             QObject::tr("also shows amax_compute_algorithm, which has no effect")),
                                &ClusterConfig::fp8, &Fp8Config::amaxComputeAlgo, &Fp8Config::amaxComputeAlgorithm),
             bind(flag("fp8_config.use_autocast_during_eval", QObject::tr("Autocast during eval (TE)")),
                  &ClusterConfig::fp8, &Fp8Config::useAutocastDuringEval),
             bindEitherSpelling(schemaChoice("fp8_config.opt_level", QObject::tr("Optimization level (MS-AMP)"),
                                             QObject::tr("also shows optimization_level, which has no effect")),
                                &ClusterConfig::fp8, &Fp8Config::optLevel, &Fp8Config::optimizationLevel),
             bind(flag("fp8_config.enable_fsdp_float8_all_gather", QObject::tr("FSDP float8 all-gather (AO)")),
                  &ClusterConfig::fp8, &Fp8Config::enableFsdpFloat8AllGather),
             bind(flag("fp8_config.pad_inner_dim", QObject::tr("Pad inner dimension (AO)")), &ClusterConfig::fp8,
                  &Fp8Config::padInnerDim),
         }});

    QStringList reshardChoices = {QStringLiteral("true"), QStringLiteral("false")};
    reshardChoices += schemaChoices("fsdp_config.fsdp_reshard_after_forward");
    groups.push_back(
        {QObject::tr("FSDP"),
         QStringLiteral("group:fsdp"),
         0,
         {
             bind(schemaNumber("fsdp_config.fsdp_version", QObject::tr("Version")), &ClusterConfig::fsdp,
                  &FsdpConfig::version),
             bind(choice("fsdp_config.fsdp_reshard_after_forward", QObject::tr("Reshard after forward"), reshardChoices,
                         QObject::tr("FSDP2: true or false; FSDP1: a sharding strategy")),
                  &ClusterConfig::fsdp, &FsdpConfig::reshardAfterForward),
             bind(schemaChoice("fsdp_config.fsdp_sharding_strategy", QObject::tr("Sharding strategy (FSDP1)")),
                  &ClusterConfig::fsdp, &FsdpConfig::shardingStrategy),
             bind(flag("fsdp_config.fsdp_offload_params", QObject::tr("Offload parameters to CPU")),
                  &ClusterConfig::fsdp, &FsdpConfig::offloadParams),
             bind(schemaChoice("fsdp_config.fsdp_auto_wrap_policy", QObject::tr("Auto wrap policy")),
                  &ClusterConfig::fsdp, &FsdpConfig::autoWrapPolicy),
             bind(text("fsdp_config.fsdp_transformer_layer_cls_to_wrap", QObject::tr("Layer classes to wrap"),
                       QObject::tr("comma-separated class names")),
                  &ClusterConfig::fsdp, &FsdpConfig::transformerLayerClsToWrap),
             bind(schemaNumber("fsdp_config.fsdp_min_num_params", QObject::tr("Min parameters per wrap")),
                  &ClusterConfig::fsdp, &FsdpConfig::minNumParams),
             bind(schemaChoice("fsdp_config.fsdp_backward_prefetch", QObject::tr("Backward prefetch (FSDP1)")),
                  &ClusterConfig::fsdp, &FsdpConfig::backwardPrefetch),
             bind(schemaChoice("fsdp_config.fsdp_state_dict_type", QObject::tr("State dict type"),
                               QObject::tr("SHARDED_STATE_DICT saves pytorch_model_fsdp_0/ in pieces. A Python "
                                           "script writes torch.distributed.checkpoint files, which `accel "
                                           "merge-weights` and `accelerate merge-weights` both join. A native job "
                                           "(accel-worker) writes accel's own folder (index.json and "
                                           "rank<r>.safetensors: C++ cannot write the pickled .metadata), which "
                                           "Accelerate's tool refuses (\"metadata is None\"): join it with `accel "
                                           "merge-weights CHECKPOINT OUTPUT_DIR`.")),
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
             bind(schemaNumber("deepspeed_config.zero_stage", QObject::tr("ZeRO stage")), &ClusterConfig::deepspeed,
                  &DeepSpeedConfig::zeroStage),
             bind(schemaChoice("deepspeed_config.offload_optimizer_device", QObject::tr("Offload optimizer to")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadOptimizerDevice),
             bind(schemaChoice("deepspeed_config.offload_param_device", QObject::tr("Offload parameters to")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadParamDevice),
             bind(text("deepspeed_config.offload_optimizer_nvme_path", QObject::tr("Optimizer NVMe path")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadOptimizerNvmePath),
             bind(text("deepspeed_config.offload_param_nvme_path", QObject::tr("Parameter NVMe path")),
                  &ClusterConfig::deepspeed, &DeepSpeedConfig::offloadParamNvmePath),
             bind(schemaNumber("deepspeed_config.gradient_accumulation_steps", QObject::tr("Gradient accumulation")),
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
             bind(schemaChoice("deepspeed_config.deepspeed_multinode_launcher", QObject::tr("Multi-node launcher")),
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
             bind(schemaChoice("dynamo_config.dynamo_backend", QObject::tr("Backend")), &ClusterConfig::dynamo,
                  &DynamoConfig::backend),
             bind(schemaChoice("dynamo_config.dynamo_mode", QObject::tr("Mode")), &ClusterConfig::dynamo,
                  &DynamoConfig::mode),
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
             bind(schemaNumber("main_process_port", QObject::tr("Main process port"),
                               QObject::tr("0: pick a free port")),
                  &ClusterConfig::mainProcessPort),
             bind(schemaChoice("rdzv_backend", QObject::tr("Rendezvous backend")), &ClusterConfig::rdzvBackend),
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
