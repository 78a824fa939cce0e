#include "app/studio/monitor/metricpanels.h"

#include <QCoreApplication>

#include <algorithm>

namespace accel::app {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("accel::app::MonitorPage", text);
}

QList<ChartSpec> makeBuiltInCharts()
{
    using monitor::XAxis;
    QList<ChartSpec> specs(BuiltInChartCount);
    specs[LossChart] = {tr("Loss"), {QStringLiteral("loss")}, true, true, AxisUnit::Plain, tr("loss")};
    specs[LrChart] = {
        tr("Learning rate"), {QStringLiteral("lr"), QStringLiteral("learning_rate")}, false, false, AxisUnit::Plain,
        tr("learning rate")};
    // tokens_per_s (a language model's throughput) is not one of its names: it gets a panel of its
    // own beside samples/s.
    specs[ThroughputChart] = {tr("Throughput"),
                              {QStringLiteral("samples_per_s"), QStringLiteral("it_per_s")},
                              false,
                              true,
                              AxisUnit::PerSecond,
                              tr("samples")};
    specs[MemoryChart] = {tr("Memory per rank"),
                          {QStringLiteral("mem_rss_bytes")},
                          false,
                          false,
                          AxisUnit::Bytes,
                          tr("resident memory"),
                          XAxis::Time};
    specs[GradNormChart] = {tr("Grad norm"), {QStringLiteral("grad_norm")}, false, true, AxisUnit::Plain,
                            tr("grad norm")};
    specs[EvalLossChart] = {tr("Eval loss"), {QStringLiteral("eval_loss")}, true, false, AxisUnit::Plain,
                            tr("eval loss")};
    specs[CpuChart] = {tr("CPU per rank"), {QStringLiteral("cpu_percent")}, false,      false,
                       AxisUnit::Percent,  tr("CPU, 100 = one core"),       XAxis::Time};
    // NVML's utilisation: the share of the last sample period in which a kernel ran.
    specs[GpuUtilChart] = {tr("GPU utilisation"),
                           {QStringLiteral("gpu_util_percent")},
                           false,
                           false,
                           AxisUnit::Percent,
                           tr("GPU busy"),
                           XAxis::Time,
                           QStringLiteral("gpu"),
                           QStringLiteral("_util_percent"),
                           tr("GPU %1")};
    specs[GpuMemoryChart] = {tr("GPU memory"),
                             {QStringLiteral("mem_device_bytes")},
                             false,
                             false,
                             AxisUnit::Bytes,
                             tr("GPU memory in use"),
                             XAxis::Time,
                             QStringLiteral("gpu"),
                             QStringLiteral("_mem_used_bytes"),
                             tr("GPU %1 (all processes)")};
    return specs;
}

bool isDeviceKey(const QString &name, const QString &prefix, const QString &suffix)
{
    if (!name.startsWith(prefix) || !name.endsWith(suffix) || name.size() <= prefix.size() + suffix.size())
        return false;
    const QStringView digits = QStringView(name).mid(prefix.size(), name.size() - prefix.size() - suffix.size());
    return std::all_of(digits.begin(), digits.end(), [](QChar c) { return c.isDigit(); });
}

} // namespace

const QList<ChartSpec> &builtInCharts()
{
    static const QList<ChartSpec> specs = makeBuiltInCharts();
    return specs;
}

QString panelKey(BuiltInChart chart)
{
    return builtInCharts().at(chart).names.first();
}

int builtInChartOf(const QString &key)
{
    for (int chart = 0; chart < BuiltInChartCount; ++chart) {
        if (builtInCharts().at(chart).names.first() == key)
            return chart;
    }
    return -1;
}

bool shownByBuiltInChart(const QString &name)
{
    for (const ChartSpec &spec : builtInCharts()) {
        if (spec.names.contains(name))
            return true;
        if (!spec.devicePrefix.isEmpty() && isDeviceKey(name, spec.devicePrefix, spec.deviceSuffix))
            return true;
    }
    return false;
}

bool isBookkeeping(const QString &name)
{
    return name == QLatin1String("pid");
}

ChartSpec specForKey(const QString &key, bool systemOnly)
{
    ChartSpec spec;
    spec.title = key;
    spec.names = {key};
    spec.valueLabel = key.section(QLatin1Char('/'), -1);
    const QString base = spec.valueLabel.toLower();
    if (base.endsWith(QLatin1String("_bytes")))
        spec.unit = AxisUnit::Bytes;
    else if (base.endsWith(QLatin1String("_percent")))
        spec.unit = AxisUnit::Percent;
    else if (base.endsWith(QLatin1String("_per_s")))
        spec.unit = AxisUnit::PerSecond;
    else if (base.endsWith(QLatin1String("_s")) || base.endsWith(QLatin1String("_seconds")))
        spec.unit = AxisUnit::Seconds;
    static const QStringList schedules = {QStringLiteral("lr"), QStringLiteral("learning_rate"),
                                          QStringLiteral("epoch"), QStringLiteral("step"),
                                          QStringLiteral("global_step")};
    spec.smoothable = !systemOnly && !schedules.contains(base) && !base.endsWith(QLatin1String("_lr")) &&
                      spec.unit != AxisUnit::Bytes;
    spec.withMean = !systemOnly;
    if (systemOnly) {
        spec.xAxis = monitor::XAxis::Time;
        spec.hostSeries = true;
    }
    return spec;
}

QString chartsSection()
{
    return tr("Charts");
}

QString systemSection()
{
    return tr("System");
}

QString sectionOf(const QString &key, bool systemOnly)
{
    const int chart = builtInChartOf(key);
    if (chart == MemoryChart || chart == CpuChart || chart == GpuUtilChart || chart == GpuMemoryChart || systemOnly)
        return systemSection();
    const qsizetype slash = key.indexOf(QLatin1Char('/'));
    return slash > 0 ? key.left(slash) : chartsSection();
}

bool sectionLessThan(const QString &a, const QString &b)
{
    auto rank = [](const QString &section) {
        return section == chartsSection() ? 0 : section == systemSection() ? 2 : 1;
    };
    if (rank(a) != rank(b))
        return rank(a) < rank(b);
    return a.compare(b, Qt::CaseInsensitive) < 0;
}

} // namespace accel::app
