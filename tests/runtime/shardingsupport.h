// Helpers of the sharding tests (tst_sharding, tst_shardingcompat): jobs of real ranks on
// loopback and the probe's output lines.
#pragma once

#include "tests/helpers/testsupport.h"

#include <QFile>
#include <QProcess>
#include <QTcpServer>

#include <cmath>
#include <memory>
#include <vector>

namespace accel::test::sharding {

inline int freePort()
{
    QTcpServer server;
    server.listen(QHostAddress::LocalHost, 0);
    return server.serverPort();
}

struct Job {
    bool ok = true;
    QString errors;
    QString out; // rank 0's standard output
    QString err; // rank 0's standard error
};

// `worldSize` ranks of `program`, `localWorldSize` per pretend machine, `env` on every rank.
inline Job runJob(const QString &program, int worldSize, const QStringList &arguments, const QStringList &env = {},
                  int localWorldSize = 0)
{
    if (localWorldSize == 0)
        localWorldSize = worldSize;
    const int port = freePort();
    std::vector<std::unique_ptr<QProcess>> processes;
    for (int rank = 0; rank < worldSize; ++rank) {
        auto process = std::make_unique<QProcess>();
        QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
        e.insert("RANK", QString::number(rank));
        e.insert("LOCAL_RANK", QString::number(rank % localWorldSize));
        e.insert("WORLD_SIZE", QString::number(worldSize));
        e.insert("LOCAL_WORLD_SIZE", QString::number(localWorldSize));
        e.insert("MASTER_ADDR", "127.0.0.1");
        e.insert("MASTER_PORT", QString::number(port));
        e.insert("OMP_NUM_THREADS", "1");
        for (const QString &entry : env)
            e.insert(entry.section('=', 0, 0), entry.section('=', 1));
        process->setProcessEnvironment(e);
        process->start(program, arguments);
        processes.push_back(std::move(process));
    }
    Job job;
    for (auto &process : processes) {
        if (!process->waitForFinished(120000)) {
            process->kill();
            process->waitForFinished();
        }
        const bool first = job.out.isNull();
        if (first)
            job.out = QString::fromUtf8(process->readAllStandardOutput());
        const QString err = QString::fromUtf8(process->readAllStandardError());
        if (first)
            job.err = err;
        if (process->exitStatus() != QProcess::NormalExit || process->exitCode() != 0) {
            job.ok = false;
            job.errors += QString("exit %1: %2\n").arg(process->exitCode()).arg(err);
        }
    }
    return job;
}

inline Job runRanks(int worldSize, const QStringList &arguments, const QStringList &env = {}, int localWorldSize = 0)
{
    return runJob(accel::test::binDir() + "/accel-runtime-probe", worldSize, arguments, env, localWorldSize);
}

inline QStringList readLines(const QString &path, const QString &prefix)
{
    QFile file(path);
    QStringList lines;
    if (!file.open(QIODevice::ReadOnly))
        return lines;
    for (const QByteArray &line : file.readAll().split('\n')) {
        if (line.startsWith(prefix.toUtf8()))
            lines << QString::fromUtf8(line);
    }
    return lines;
}

inline double worstDifference(const QStringList &a, const QStringList &b)
{
    if (a.isEmpty() || a.size() != b.size())
        return INFINITY;
    double worst = 0;
    for (int i = 0; i < a.size(); ++i) {
        if (a[i].section(' ', 1, 1) != b[i].section(' ', 1, 1))
            return INFINITY;
        const double x = std::strtod(a[i].section(' ', -1).toUtf8().constData(), nullptr);
        const double y = std::strtod(b[i].section(' ', -1).toUtf8().constData(), nullptr);
        worst = std::max(worst, std::abs(x - y));
    }
    return worst;
}

// Bytes of parameters, gradients and optimizer state the probe measured after its last backward.
inline QList<qint64> memoryFigures(const QString &path)
{
    const QStringList lines = readLines(path, "memory ");
    if (lines.size() != 1)
        return {};
    const QStringList parts = lines.front().split(' ');
    return {parts.value(1).toLongLong(), parts.value(2).toLongLong(), parts.value(3).toLongLong()};
}

} // namespace accel::test::sharding
