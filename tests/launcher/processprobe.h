// Test helper: finds live processes whose command line contains a marker, so tests can prove
// that no process of a job (ranks and their children) survived.
#pragma once

#include <QDir>
#include <QFile>
#include <QList>
#include <QString>

namespace accel::test {

inline QList<qint64> processesWithMarker(const QString &marker)
{
    QList<qint64> pids;
    const QByteArray needle = marker.toUtf8();
    for (const QString &entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool ok = false;
        const qint64 pid = entry.toLongLong(&ok);
        if (!ok)
            continue;
        QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(entry));
        if (cmdline.open(QIODevice::ReadOnly) && cmdline.readAll().contains(needle))
            pids << pid;
    }
    return pids;
}

} // namespace accel::test
