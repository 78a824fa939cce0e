// Helpers of the Monitor view's tests (tst_monitorpage, tst_monitorcharts): run directories with
// a manifest, appended metrics lines, events, a run's end as the supervisor writes it.
#pragma once

#include "app/studio/monitor/metricplot.h"
#include "launcher/rundirectory.h"
#include "monitor/runevent.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>

namespace accel::test::monitorpage {

inline QString makeRun(const QString &root, const QString &id)
{
    const QString path = root + QLatin1Char('/') + id;
    auto run = launcher::RunDirectory::create(path);
    if (!run)
        return {};
    QJsonObject manifest{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                         {QStringLiteral("version"), 1},
                         {QStringLiteral("id"), id},
                         {QStringLiteral("name"), QStringLiteral("test")},
                         {QStringLiteral("created"), double(QDateTime::currentSecsSinceEpoch())},
                         {QStringLiteral("state"), QStringLiteral("running")}};
    if (!run->writeManifest(manifest))
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
