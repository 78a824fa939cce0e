// Test helper: finds live processes whose command line contains a marker, so tests can prove
// that no process of a job (ranks and their children) survived.
#pragma once

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QList>
#include <QString>
#include <QThread>
#include <QUuid>

#include <functional>

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

// A unique tag for a test's processes ("marker-<uuid>").
inline QString newMarker()
{
    return QStringLiteral("marker-") + QUuid::createUuid().toString(QUuid::Id128);
}

// Polls `condition` every 10 ms until it holds (true) or `timeoutMs` passed (false).
inline bool waitFor(const std::function<bool()> &condition, int timeoutMs)
{
    QElapsedTimer clock;
    clock.start();
    while (!condition()) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QThread::msleep(10);
    }
    return true;
}

} // namespace accel::test
