// Reading a run's metrics file (docs/metrics.md) in tests: the values of one key, line by line.
#pragma once

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>
#include <QString>

namespace accel::test {

// Every value of `key` in the JSON lines of `path`, in file order (empty when unreadable).
inline QList<double> metricValues(const QString &path, const QString &key)
{
    QList<double> values;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return values;
    for (const QByteArray &line : file.readAll().split('\n')) {
        const QJsonObject object = QJsonDocument::fromJson(line).object();
        if (object.contains(key))
            values << object.value(key).toDouble();
    }
    return values;
}

} // namespace accel::test
