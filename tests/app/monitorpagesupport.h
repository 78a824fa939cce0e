// Helpers of the Monitor and Runs pages' tests (tst_monitorpage, tst_monitorcharts, tst_monitorpanels,
// tst_runspage, tst_runstable): run directories with a manifest, appended metrics lines, events, a
// run's end as the supervisor writes it, scripts to launch.
#pragma once

#include "app/studio/monitor/metricplot.h"
#include "launcher/rundirectory.h"
#include "monitor/runevent.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>

namespace accel::test::monitorpage {

// A run as the launcher creates it: run.json with this id, the id's readable part as its name
// (20261122-010000-alpha-aaaa -> alpha), a 2-process MULTI_CPU configuration, created then, in this state.
inline QString makeRun(const QString &root, const QString &id, double created = QDateTime::currentSecsSinceEpoch(),
                       const QString &state = QStringLiteral("running"))
{
    const QString path = root + QLatin1Char('/') + id;
    auto run = launcher::RunDirectory::create(path);
    if (!run)
        return {};
    const QJsonObject settings{{QStringLiteral("distributed_type"), QStringLiteral("MULTI_CPU")},
                               {QStringLiteral("num_processes"), 2},
                               {QStringLiteral("mixed_precision"), QStringLiteral("no")}};
    const QJsonObject manifest{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                               {QStringLiteral("version"), 1},
                               {QStringLiteral("id"), id},
                               {QStringLiteral("name"), id.section(QLatin1Char('-'), 2, -2)},
                               {QStringLiteral("created"), created},
                               {QStringLiteral("settings"), settings},
                               {QStringLiteral("state"), state}};
    if (!run->writeManifest(manifest))
        return {};
    return path;
}

// A script file in `folder` (for `accel launch`).
inline QString writeScript(const QString &folder, const QString &name, const QByteArray &text)
{
    const QString path = QDir(folder).filePath(name);
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size())
        return {};
    return path;
}

inline bool appendText(const QString &path, const QByteArray &text)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Append))
        return false;
    return file.write(text) == text.size();
}

inline QByteArray metricsLine(int rank, int step, double loss)
{
    return QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":%2,\"step\":%3,\"loss\":%4,\"lr\":0.001,\"samples_per_s\":%5,"
                          "\"mem_rss_bytes\":%6,\"grad_norm\":%7}\n")
        .arg(QDateTime::currentMSecsSinceEpoch() / 1000.0, 0, 'f', 3)
        .arg(rank)
        .arg(step)
        .arg(loss)
        .arg(100 + rank)
        .arg(1e8 + step * 1000)
        .arg(1.0 / (step + 1))
        .toUtf8();
}

inline int graphPoints(const app::MetricPlot *plot, int graph)
{
    return graph < plot->plot()->graphCount() ? plot->plot()->graph(graph)->data()->size() : 0;
}

inline monitor::RunEvent makeEvent(const QString &name, int rank, const QJsonObject &fields)
{
    monitor::RunEvent e;
    e.time = QDateTime::currentMSecsSinceEpoch() / 1000.0;
    e.event = name;
    e.rank = rank;
    e.fields = fields;
    return e;
}

// What the supervisor writes when a run ends: the events, then run.json's state.
inline bool endRun(const QString &run, const QList<monitor::RunEvent> &events, const QString &state,
                   const QString &detail)
{
    for (const auto &e : events) {
        if (!monitor::appendEventLine(run + QStringLiteral("/events.jsonl"), e))
            return false;
    }
    auto directory = launcher::RunDirectory::open(run, QFileInfo(run).path());
    return directory && directory->setState(state, detail).has_value();
}

} // namespace accel::test::monitorpage
