#include "app/studio/fieldrelevance.h"

#include <QStringList>

namespace accel::app {

namespace {

using config::DistributedType;

bool isCpuOnly(const config::ClusterConfig &c)
{
    return c.distributedType == DistributedType::MultiCpu || c.useCpu.value_or(false);
}

bool fp8FieldApplies(const QString &field, const config::ClusterConfig &c)
{
    if (c.mixedPrecision != config::MixedPrecision::Fp8)
        return false;
    static const QStringList te = {QStringLiteral("fp8_format"),
                                   QStringLiteral("margin"),
                                   QStringLiteral("interval"),
                                   QStringLiteral("amax_history_len"),
                                   QStringLiteral("amax_history_length"),
                                   QStringLiteral("amax_compute_algo"),
                                   QStringLiteral("amax_compute_algorithm"),
                                   QStringLiteral("use_autocast_during_eval"),
                                   QStringLiteral("override_linear_precision")};
    static const QStringList msamp = {QStringLiteral("opt_level"), QStringLiteral("optimization_level")};
    static const QStringList ao = {QStringLiteral("enable_fsdp_float8_all_gather"), QStringLiteral("pad_inner_dim")};
    const QString backend = QString::fromStdString(c.fp8.backend.value_or(std::string())).toUpper();
    if (te.contains(field))
        return backend == QLatin1String("TE");
    if (msamp.contains(field))
        return backend == QLatin1String("MSAMP");
    if (ao.contains(field))
        return backend == QLatin1String("AO");
    return true; // the backend itself
}

} // namespace

bool fieldApplies(const QString &key, const config::ClusterConfig &c)
{
    const bool multiNode = c.numMachines.value_or(1) > 1;
    const QString block = key.section(QLatin1Char('.'), 0, 0);
    const QString field = key.section(QLatin1Char('.'), 1);
    if (block == QLatin1String("fsdp_config"))
        return c.distributedType == DistributedType::Fsdp;
    if (block == QLatin1String("deepspeed_config"))
        return c.distributedType == DistributedType::DeepSpeed;
    if (block == QLatin1String("fp8_config"))
        return fp8FieldApplies(field, c);
    if (block == QLatin1String("dynamo_config")) {
        const std::string backend = c.dynamo.backend.value_or("NO");
        return field == QLatin1String("dynamo_backend") || (backend != "NO" && !backend.empty());
    }
    if (block == QLatin1String("mpirun_config"))
        return c.distributedType == DistributedType::MultiCpu && multiNode;
    if (key == QLatin1String("downcast_bf16"))
        return c.distributedType == DistributedType::Xla;
    if (key == QLatin1String("gpu_ids"))
        return !isCpuOnly(c) && c.distributedType != DistributedType::Xla;
    if (key == QLatin1String("machine_rank") || key == QLatin1String("main_process_ip") ||
        key == QLatin1String("rdzv_backend") || key == QLatin1String("same_network"))
        return multiNode;
    if (key == QLatin1String("main_process_port"))
        return multiNode || c.distributedType != DistributedType::No;
    return true;
}

} // namespace accel::app
