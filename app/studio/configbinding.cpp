#include "app/studio/configbinding.h"

#include "app/studio/configvaluetext.h"

#include "core/config/configschema.h"

#include <algorithm>
#include <cstdint>

namespace accel::app {

namespace {
using config::ClusterConfig;
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

// The field of a key the schema declares: its editor follows the key's kind, values and range.
FieldSpec schemaField(const char *key, const QString &label, const QString &toolTip)
{
    using RuleKind = config::schema::KeyRule::Kind;
    const config::schema::KeyRule &keyRule = rule(key);
    switch (keyRule.kind) {
    case RuleKind::Flag:
        return flag(key, label, toolTip);
    case RuleKind::Integer: {
        const config::schema::Range &range = keyRule.range;
        const std::int64_t intMax = 2147483647;
        return number(key, label, static_cast<int>(std::max<std::int64_t>(range.minimum.value_or(-intMax), -intMax)),
                      static_cast<int>(std::min<std::int64_t>(range.maximum.value_or(intMax), intMax)), toolTip);
    }
    case RuleKind::Text:
        return keyRule.choices.values.empty() ? text(key, label, toolTip)
                                              : choice(key, label, schemaChoices(key), toolTip);
    case RuleKind::BoolOrText:
        // true / false, or one of the key's names (fsdp_reshard_after_forward: FSDP2 a bool,
        // FSDP1 a sharding strategy).
        return keyRule.choices.values.empty()
                   ? text(key, label, toolTip)
                   : choice(key, label,
                            QStringList{QStringLiteral("true"), QStringLiteral("false")} + schemaChoices(key), toolTip);
    case RuleKind::Number:
    case RuleKind::TextList:
    case RuleKind::FlagList:
        break;
    }
    return text(key, label, toolTip);
}

// One row of the form: a schema key, its label and tool tip. `otherSpelling`: a second key the
// field also shows and drops on edit (bindEitherSpelling).
struct Row {
    const char *key;
    const char *label;
    const char *toolTip = nullptr;
    const char *otherSpelling = nullptr;
};

FieldBinding schemaBinding(const Row &row)
{
    FieldSpec spec = schemaField(row.key, QObject::tr(row.label), row.toolTip ? QObject::tr(row.toolTip) : QString());
    return row.otherSpelling ? configtext::bindEitherSpelling(std::move(spec), row.otherSpelling)
                             : configtext::bind(std::move(spec));
}

FieldGroup schemaGroup(const char *title, const char *objectName, int column, std::vector<FieldBinding> special,
                       std::initializer_list<Row> rows)
{
    FieldGroup group{QObject::tr(title), QString::fromLatin1(objectName), column, std::move(special)};
    for (const Row &row : rows)
        group.fields.push_back(schemaBinding(row));
    return group;
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
    std::vector<FieldGroup> groups;
    groups.push_back(schemaGroup(
        QT_TR_NOOP("General and topology"), "group:general", 0, {computeEnvironmentField(), distributedTypeField()},
        {
            {"num_processes", QT_TR_NOOP("Processes (all machines)"),
             QT_TR_NOOP("-1: the number must be given at launch")},
            {"num_machines", QT_TR_NOOP("Machines")},
            {"machine_rank", QT_TR_NOOP("This machine's rank")},
            {"gpu_ids", QT_TR_NOOP("GPU ids"), QT_TR_NOOP("all, or a comma list such as 0,1,3")},
            {"use_cpu", QT_TR_NOOP("Force CPU")},
            {"enable_cpu_affinity", QT_TR_NOOP("CPU affinity (NUMA)")},
            {"debug", QT_TR_NOOP("Debug checks")},
            {"main_training_function", QT_TR_NOOP("Main training function")},
        }));

    // The FP8 keys Accelerate's recipes read; a file's questionnaire spelling (amax_history_length,
    // amax_compute_algorithm, optimization_level) shows in the same field and is replaced by the
    // working one when the field is edited.
    groups.push_back(schemaGroup(
        QT_TR_NOOP("Mixed precision and FP8"), "group:precision", 1, {mixedPrecisionField()},
        {
            {"downcast_bf16", QT_TR_NOOP("Downcast bf16 (XLA)"), QT_TR_NOOP("'no', true or false")},
            {"fp8_config.backend", QT_TR_NOOP("FP8 backend")},
            {"fp8_config.fp8_format", QT_TR_NOOP("FP8 format (TE)")},
            {"fp8_config.margin", QT_TR_NOOP("Scaling margin (TE)")},
            {"fp8_config.interval", QT_TR_NOOP("Scaling interval (TE)")},
            {"fp8_config.amax_history_len", QT_TR_NOOP("Amax history length (TE)"),
             QT_TR_NOOP("also shows amax_history_length, which has no effect"), "fp8_config.amax_history_length"},
            {"fp8_config.amax_compute_algo", QT_TR_NOOP("Amax algorithm (TE)"),
             QT_TR_NOOP("also shows amax_compute_algorithm, which has no effect"), "fp8_config.amax_compute_algorithm"},
            {"fp8_config.use_autocast_during_eval", QT_TR_NOOP("Autocast during eval (TE)")},
            {"fp8_config.opt_level", QT_TR_NOOP("Optimization level (MS-AMP)"),
             QT_TR_NOOP("also shows optimization_level, which has no effect"), "fp8_config.optimization_level"},
            {"fp8_config.enable_fsdp_float8_all_gather", QT_TR_NOOP("FSDP float8 all-gather (AO)")},
            {"fp8_config.pad_inner_dim", QT_TR_NOOP("Pad inner dimension (AO)")},
        }));

    groups.push_back(
        schemaGroup(QT_TR_NOOP("FSDP"), "group:fsdp", 0, {},
                    {
                        {"fsdp_config.fsdp_version", QT_TR_NOOP("Version")},
                        {"fsdp_config.fsdp_reshard_after_forward", QT_TR_NOOP("Reshard after forward"),
                         QT_TR_NOOP("FSDP2: true or false; FSDP1: a sharding strategy")},
                        {"fsdp_config.fsdp_sharding_strategy", QT_TR_NOOP("Sharding strategy (FSDP1)")},
                        {"fsdp_config.fsdp_offload_params", QT_TR_NOOP("Offload parameters to CPU")},
                        {"fsdp_config.fsdp_auto_wrap_policy", QT_TR_NOOP("Auto wrap policy")},
                        {"fsdp_config.fsdp_transformer_layer_cls_to_wrap", QT_TR_NOOP("Layer classes to wrap"),
                         QT_TR_NOOP("comma-separated class names")},
                        {"fsdp_config.fsdp_min_num_params", QT_TR_NOOP("Min parameters per wrap")},
                        {"fsdp_config.fsdp_backward_prefetch", QT_TR_NOOP("Backward prefetch (FSDP1)")},
                        {"fsdp_config.fsdp_state_dict_type", QT_TR_NOOP("State dict type"),
                         QT_TR_NOOP("SHARDED_STATE_DICT saves pytorch_model_fsdp_0/ in pieces. A Python "
                                    "script writes torch.distributed.checkpoint files, which `accel "
                                    "merge-weights` and `accelerate merge-weights` both join. A native job "
                                    "(accel-worker) writes accel's own folder (index.json and "
                                    "rank<r>.safetensors: C++ cannot write the pickled .metadata), which "
                                    "Accelerate's tool refuses (\"metadata is None\"): join it with `accel "
                                    "merge-weights CHECKPOINT OUTPUT_DIR`.")},
                        {"fsdp_config.fsdp_forward_prefetch", QT_TR_NOOP("Forward prefetch (FSDP1)")},
                        {"fsdp_config.fsdp_use_orig_params", QT_TR_NOOP("Use original parameters (FSDP1)")},
                        {"fsdp_config.fsdp_cpu_ram_efficient_loading", QT_TR_NOOP("CPU-RAM-efficient loading")},
                        {"fsdp_config.fsdp_sync_module_states", QT_TR_NOOP("Sync module states (FSDP1)")},
                        {"fsdp_config.fsdp_activation_checkpointing", QT_TR_NOOP("Activation checkpointing")},
                        {"fsdp_config.fsdp_ignored_modules", QT_TR_NOOP("Ignored modules (regex)")},
                    }));

    groups.push_back(schemaGroup(
        QT_TR_NOOP("DeepSpeed"), "group:deepspeed", 1, {},
        {
            {"deepspeed_config.deepspeed_config_file", QT_TR_NOOP("DeepSpeed JSON file")},
            {"deepspeed_config.zero_stage", QT_TR_NOOP("ZeRO stage")},
            {"deepspeed_config.offload_optimizer_device", QT_TR_NOOP("Offload optimizer to")},
            {"deepspeed_config.offload_param_device", QT_TR_NOOP("Offload parameters to")},
            {"deepspeed_config.offload_optimizer_nvme_path", QT_TR_NOOP("Optimizer NVMe path")},
            {"deepspeed_config.offload_param_nvme_path", QT_TR_NOOP("Parameter NVMe path")},
            {"deepspeed_config.gradient_accumulation_steps", QT_TR_NOOP("Gradient accumulation")},
            {"deepspeed_config.gradient_clipping", QT_TR_NOOP("Gradient clipping"), QT_TR_NOOP("a number such as 1.0")},
            {"deepspeed_config.zero3_save_16bit_model", QT_TR_NOOP("16-bit save (ZeRO-3)")},
            {"deepspeed_config.zero3_init_flag", QT_TR_NOOP("zero.Init (ZeRO-3)")},
            {"deepspeed_config.deepspeed_moe_layer_cls_names", QT_TR_NOOP("MoE layer classes")},
            {"deepspeed_config.deepspeed_multinode_launcher", QT_TR_NOOP("Multi-node launcher")},
            {"deepspeed_config.deepspeed_hostfile", QT_TR_NOOP("Hostfile")},
            {"deepspeed_config.deepspeed_exclusion_filter", QT_TR_NOOP("Exclusion filter")},
            {"deepspeed_config.deepspeed_inclusion_filter", QT_TR_NOOP("Inclusion filter")},
        }));

    groups.push_back(
        schemaGroup(QT_TR_NOOP("Dynamo (torch.compile)"), "group:dynamo", 1, {},
                    {
                        {"dynamo_config.dynamo_backend", QT_TR_NOOP("Backend")},
                        {"dynamo_config.dynamo_mode", QT_TR_NOOP("Mode")},
                        {"dynamo_config.dynamo_use_fullgraph", QT_TR_NOOP("Full graph")},
                        {"dynamo_config.dynamo_use_dynamic", QT_TR_NOOP("Dynamic shapes")},
                        {"dynamo_config.dynamo_use_regional_compilation", QT_TR_NOOP("Regional compilation")},
                    }));

    groups.push_back(
        schemaGroup(QT_TR_NOOP("Multi-node"), "group:multinode", 0, {},
                    {
                        {"main_process_ip", QT_TR_NOOP("Main process IP")},
                        {"main_process_port", QT_TR_NOOP("Main process port"), QT_TR_NOOP("0: pick a free port")},
                        {"rdzv_backend", QT_TR_NOOP("Rendezvous backend")},
                        {"same_network", QT_TR_NOOP("Machines on the same network")},
                        {"mpirun_config.mpirun_hostfile", QT_TR_NOOP("mpirun hostfile")},
                    }));
    return groups;
}
} // namespace

const std::vector<FieldGroup> &configFieldGroups()
{
    static const std::vector<FieldGroup> groups = buildGroups();
    return groups;
}

} // namespace accel::app
