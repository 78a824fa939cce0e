#include "app/studio/monitor/chartseries.h"

#include "app/studio/monitor/plotcurves.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QSaveFile>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <limits>

namespace accel::app {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("accel::app::MetricPlot", text);
}

// The device index in a host series name (gpu12_util_percent -> 12), -1 when it is not one.
int deviceIndex(const ChartSpec &spec, const QString &name)
{
    if (!name.startsWith(spec.devicePrefix) || !name.endsWith(spec.deviceSuffix))
        return -1;
    const qsizetype length = name.size() - spec.devicePrefix.size() - spec.deviceSuffix.size();
    if (length <= 0)
        return -1;
    const QStringView digits = QStringView(name).mid(spec.devicePrefix.size(), length);
    if (!std::all_of(digits.begin(), digits.end(), [](QChar c) { return c.isDigit(); }))
        return -1;
    bool ok = false;
    const int index = digits.toInt(&ok);
    return ok ? index : -1;
}

} // namespace

XMode effectiveXMode(const ChartSpec &spec, XMode chosen)
{
    return spec.xAxis == monitor::XAxis::Time && chosen == XMode::Step ? XMode::RelativeTime : chosen;
}

QList<ShownSeries> shownSeries(const ChartSpec &spec, const monitor::MetricStore &store)
{
    QList<ShownSeries> shown;
    QList<ShownSeries> host;
    QList<ShownSeries> devices;
    for (int rank : store.ranks()) {
        if (rank < 0 && spec.hostSeries) {
            for (const auto &name : spec.names) {
                const auto *s = store.series(rank, name);
                if (s && !s->empty()) {
                    host.append({rank, -1, tr("host"), name, s});
                    break;
                }
            }
        }
        if (rank >= 0) {
            for (const auto &name : spec.names) {
                const auto *s = store.series(rank, name);
                if (s && !s->empty()) {
                    shown.append({rank, -1, tr("rank %1").arg(rank), name, s});
                    break;
                }
            }
        } else if (!spec.devicePrefix.isEmpty()) {
            for (const QString &name : store.scalarNames(rank)) {
                const int device = deviceIndex(spec, name);
                const auto *s = device >= 0 ? store.series(rank, name) : nullptr;
                if (s && !s->empty())
                    devices.append({rank, device, spec.deviceLabel.arg(device), name, s});
            }
        }
    }
    std::sort(devices.begin(), devices.end(),
              [](const ShownSeries &a, const ShownSeries &b) { return a.device < b.device; });
    return shown + host + devices;
}

double timeOrigin(const monitor::MetricStore &store)
{
    const double first = store.firstTime();
    return std::isfinite(first) ? first : 0.0;
}

double sampleX(const monitor::Series &series, size_t i, XMode mode, double origin)
{
    switch (mode) {
    case XMode::Step:
        return series.steps[i];
    case XMode::WallTime:
        return series.times[i];
    case XMode::RelativeTime:
        break;
    }
    return series.times[i] - origin;
}

QString formatX(double x, XMode mode)
{
    switch (mode) {
    case XMode::Step:
        return tr("step %1").arg(qint64(x));
    case XMode::WallTime:
        return QDateTime::fromMSecsSinceEpoch(qint64(std::llround(x * 1000))).toString(QStringLiteral("HH:mm:ss"));
    case XMode::RelativeTime:
        break;
    }
    return tr("%1 s").arg(x, 0, 'f', 1);
}

QStringList readoutLines(const ChartSpec &spec, const QList<ChartRun> &runs, double x, XMode chosen)
{
    QStringList lines;
    const XMode mode = effectiveXMode(spec, chosen);
    const monitor::XAxis axis = mode == XMode::Step ? monitor::XAxis::Step : monitor::XAxis::Time;
    const bool overlay = runs.size() > 1;
    for (const auto &run : runs) {
        const QList<ShownSeries> shown = shownSeries(spec, *run.store);
        const double origin = mode == XMode::RelativeTime ? timeOrigin(*run.store) : 0.0;
        for (const auto &entry : shown) {
            const auto &s = *entry.series;
            const auto nearest = nearestSample(s, axis, x + origin);
            if (!nearest)
                continue;
            const QString where = formatX(sampleX(s, *nearest, mode, origin), mode);
            const QString who = !overlay            ? entry.who
                                : shown.size() == 1 ? run.label
                                                    : tr("%1 %2").arg(run.label, entry.who);
            lines.append(tr("%1: %2 (%3)").arg(who, formatValue(s.values[*nearest], spec.unit), where));
        }
    }
    return lines;
}

bool writeSamplesCsv(const ChartSpec &spec, const QList<ChartRun> &runs, const QString &path, QString *error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error)
            *error = tr("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    QTextStream out(&file);
    out << "run,rank,metric,step,time,value\n";
    for (const auto &run : runs) {
        QString label = run.label;
        label.replace(QLatin1Char('"'), QLatin1String("\"\""));
        for (const auto &entry : shownSeries(spec, *run.store)) {
            const auto &s = *entry.series;
            for (size_t i = 0; i < s.size(); ++i) {
                out << '"' << label << "\"," << entry.rank << ',' << entry.name << ',';
                if (std::isfinite(s.steps[i]))
                    out << qint64(s.steps[i]);
                out << ',' << QString::number(s.times[i], 'f', 3) << ',';
                if (std::isfinite(s.values[i]))
                    out << QString::number(s.values[i], 'g', 10);
                out << '\n';
            }
        }
    }
    out.flush();
    if (!file.commit()) {
        if (error)
            *error = tr("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

} // namespace accel::app
