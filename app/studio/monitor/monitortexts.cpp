#include "app/studio/monitor/monitortexts.h"

#include "core/rundir/runlayout.h"
#include "monitor/runcatalogue.h"
#include "monitor/runsmodel.h"

#include <QCoreApplication>
#include <QFileInfo>

namespace accel::app {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("accel::app::MonitorPage", text);
}

// The last part of a run id ("20261128-225301-train-3fa2" -> "3fa2").
QString idSuffix(const QString &address)
{
    QString path;
    const QString folder = monitor::parseRemoteRunAddress(address, nullptr, &path) ? QFileInfo(path).fileName()
                                                                                   : QFileInfo(address).fileName();
    return folder.section(QLatin1Char('-'), -1);
}

} // namespace

QStringList runLabels(const QStringList &addresses, const QHash<QString, QString> &names)
{
    QStringList labels;
    for (const QString &address : addresses) {
        QString name = names.value(address);
        QString host, path;
        if (name.isEmpty() && monitor::parseRemoteRunAddress(address, &host, &path)) {
            name = tr("%1 on %2").arg(QFileInfo(path).fileName(), host);
        } else if (name.isEmpty()) {
            monitor::RunInfo info;
            name = monitor::readRunInfo(address, info) ? info.displayName() : QFileInfo(address).fileName();
        }
        labels.append(name);
    }
    for (qsizetype i = 0; i < labels.size(); ++i) {
        if (labels.count(labels[i]) < 2)
            continue;
        const QString base = labels[i];
        for (qsizetype j = i; j < labels.size(); ++j) {
            if (labels[j] == base)
                labels[j] = tr("%1 · %2").arg(base, idSuffix(addresses[j]));
        }
    }
    return labels;
}

QString whyNoMetrics(const QString &label, const QString &state, bool printed, bool readingOutput)
{
    const QString metricsFile =
        QString::fromStdString(rundir::metricsFile(0)).replace(QLatin1Char('0'), QLatin1Char('N'));
    if (state == QLatin1String(rundir::state::Failed))
        return tr("%1 failed before it logged a metric: its error is in the card above and in Logs.").arg(label);
    if (state == QLatin1String(rundir::state::Stopped))
        return tr("%1 was stopped before it logged a metric.").arg(label);
    if (state == QLatin1String(rundir::state::Lost))
        return tr("%1 lost its supervisor before it logged a metric.").arg(label);
    if (state == QLatin1String(rundir::state::Succeeded))
        return tr("%1 finished without logging a metric: log them with the tracker (from accel_studio_tracker "
                  "import log), or read them from its printed output (Panels).")
            .arg(label);
    if (printed && !readingOutput)
        return tr("%1 prints but has logged no metric yet (%2).").arg(label, metricsFile);
    if (printed)
        return tr("%1 prints, and nothing in its output looks like a metric yet.").arg(label);
    if (state.isEmpty())
        return tr("Reading %1…").arg(label);
    return tr("Waiting for %1's first metrics line (%2)…").arg(label, metricsFile);
}

} // namespace accel::app
