// Test helper: finds live processes whose command line contains a marker, so tests can prove
// that no process of a job (ranks and their children) survived.
#pragma once

#include <QDir>
#include <QFile>
#include <QList>
#include <QString>

namespace accel::test {

// `program`: when not empty, only processes whose argv[0] ends with it (e.g. "fakechild", to leave
// out an accel supervisor whose own command line carries the marker too).
inline QList<qint64> processesWithMarker(const QString &marker, const QString &program = {})
{
    QList<qint64> pids;
    const QByteArray needle = marker.toUtf8();
    for (const QString &entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool ok = false;
        const qint64 pid = entry.toLongLong(&ok);
        if (!ok)
            continue;
        QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(entry));
        if (!cmdline.open(QIODevice::ReadOnly))
            continue;
        const QByteArray text = cmdline.readAll();
        if (text.contains(needle) && (program.isEmpty() || text.left(text.indexOf('\0')).endsWith(program.toUtf8())))
            pids << pid;
    }
    return pids;
}

} // namespace accel::test
