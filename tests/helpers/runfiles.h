// Test helpers that write a run directory's files the way the launcher and the ranks do: whole
// appended lines, run.json replaced atomically, metrics lines of docs/metrics.md.
#pragma once

#include <QByteArray>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QString>
#include <QTest>

namespace accel::test {

inline void append(const QString &path, const QByteArray &bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Append));
    QCOMPARE(file.write(bytes), bytes.size());
}

// run.json with this state (id = the folder's name), replaced atomically as the launcher does.
inline void writeManifest(const QString &runDir, const QString &state)
{
    QSaveFile file(runDir + QStringLiteral("/run.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QJsonDocument(QJsonObject{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                                         {QStringLiteral("version"), 1},
                                         {QStringLiteral("id"), QFileInfo(runDir).fileName()},
                                         {QStringLiteral("state"), state}})
                   .toJson(QJsonDocument::Compact));
    QVERIFY(file.commit());
}

inline QByteArray metricLine(int rank, int step)
{
    return "{\"v\":1,\"time\":" + QByteArray::number(1000 + step) + ",\"rank\":" + QByteArray::number(rank) +
           ",\"step\":" + QByteArray::number(step) + ",\"loss\":" + QByteArray::number(5.0 / step) + "}\n";
}

} // namespace accel::test
