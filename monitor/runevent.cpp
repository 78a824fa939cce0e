#include "monitor/runevent.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include <cmath>

namespace accel::monitor {

namespace {

QByteArray jsonString(const QString &text)
{
    const QByteArray array = QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact); // ["text"]
    return array.mid(1, array.size() - 2);
}

} // namespace

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
    // Written by hand so the leading keys keep their order (QJsonObject sorts keys).
    QByteArray line =
        "{\"v\":1,\"time\":" +
        QByteArray::number(std::isfinite(event.time) ? event.time : QDateTime::currentMSecsSinceEpoch() / 1000.0, 'f',
                           3) +
        ",\"event\":" + jsonString(event.event);
    if (event.rank >= 0)
        line += ",\"rank\":" + QByteArray::number(event.rank);
    QJsonObject rest = event.fields;
    for (const char *key : {"v", "time", "event", "rank"})
        rest.remove(QLatin1String(key));
    if (!rest.isEmpty()) {
        const QByteArray more = QJsonDocument(rest).toJson(QJsonDocument::Compact);
        line += ',' + more.mid(1, more.size() - 2);
    }
    line += "}\n";
    return line;
}

bool appendEventLine(const QString &eventsFile, const RunEvent &event)
{
    QFile file(eventsFile);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered))
        return false;
    const QByteArray line = encodeEventLine(event);
    return file.write(line) == line.size();
}

int rankFromFileName(const QString &fileName)
{
    static const QRegularExpression pattern(QStringLiteral("^rank(\\d+)\\.[a-z]+$"));
    const auto match = pattern.match(fileName);
    return match.hasMatch() ? match.captured(1).toInt() : -1;
}

} // namespace accel::monitor
