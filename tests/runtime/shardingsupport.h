// Helpers of the sharding tests (tst_sharding, tst_shardingcompat): jobs of real ranks on
// loopback and the probe's output lines.
#pragma once

#include "tests/helpers/rankjob.h"
#include "tests/helpers/testsupport.h"

#include <QFile>

#include <cmath>

namespace accel::test::sharding {

struct Job {
    bool ok = true;
    QString errors; // failures(): "exit C: <stderr>" per failed rank
    QString out;    // rank 0's standard output
    QString err;    // rank 0's standard error
};

// `worldSize` ranks of `program`, `localWorldSize` per pretend machine, `env` on every rank.
inline Job runJob(const QString &program, int worldSize, const QStringList &arguments, const QStringList &env = {},
                  int localWorldSize = 0)
{
    RankJob rankJob;
    rankJob.program = program;
    rankJob.arguments = arguments;
    rankJob.worldSize = worldSize;
    rankJob.localWorldSize = localWorldSize;
    rankJob.env = env;
    const QList<RankOutcome> ranks = runRankJob(rankJob);
    Job job;
    job.out = ranks.value(0).out;
    job.err = ranks.value(0).err;
    job.errors = failures(ranks);
    job.ok = job.errors.isEmpty();
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
