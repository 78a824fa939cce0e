#include "monitor/runevent.h"

#include "core/rundir/runevents.h"
#include "core/rundir/runlayout.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QRegularExpression>

#include <cmath>

namespace accel::monitor {

bool parseEventLine(const QByteArray &line, RunEvent &event)
{
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(line, &error);
    if (error.error != QJsonParseError::NoError || !document.isObject())
        return false;
    const QJsonObject object = document.object();
    const QJsonValue name = object.value(QLatin1String("event"));
    if (!name.isString())
        return false;
    if (object.value(QLatin1String("v")).toDouble(1) >= 2)
        return false;
    event.event = name.toString();
    event.time = object.value(QLatin1String("time")).toDouble(std::nan(""));
    event.rank = object.value(QLatin1String("rank")).toInt(-1);
    event.fields = object;
    return true;
}

QByteArray encodeEventLine(const RunEvent &event)
{
    QJsonObject rest = event.fields;
    for (const char *key : {"v", "time", "event", "rank"})
        rest.remove(QLatin1String(key));
    QByteArray more;
    if (!rest.isEmpty()) {
        more = QJsonDocument(rest).toJson(QJsonDocument::Compact);
        more = more.mid(1, more.size() - 2);
    }
    return QByteArray::fromStdString(
               rundir::encodeEventLine(event.time, event.event.toStdString(), event.rank, more.toStdString())) +
           '\n';
}

bool appendEventLine(const QString &eventsFile, const RunEvent &event)
{
    // The run's events.jsonl, written as every writer of a run folder writes it: never through a
    // symlink (core/rundir/privatefiles.h).
    const QFileInfo info(eventsFile);
    if (info.fileName() != QLatin1String(rundir::file::Events))
        return false;
    const QByteArray line = encodeEventLine(event);
    return bool(
        rundir::appendEvent(QFile::encodeName(info.path()).toStdString(), line.left(line.size() - 1).toStdString()));
}

int rankFromFileName(const QString &fileName)
{
    static const QRegularExpression pattern(QStringLiteral("^rank(\\d+)\\.[a-z]+$"));
    const auto match = pattern.match(fileName);
    return match.hasMatch() ? match.captured(1).toInt() : -1;
}

} // namespace accel::monitor
