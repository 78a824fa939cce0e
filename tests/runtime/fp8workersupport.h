// Helpers of the FP8 worker tests (tst_fp8accelerator, tst_fp8sharded): accel-worker ranks on
// loopback running a job, and the training losses they logged.
#pragma once

#include "tests/helpers/rankjob.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <map>

namespace accel::test::fp8 {

struct WorkerRun {
    bool ok = true;
    QString output; // every rank's standard output and error, rank by rank
};

// accel-worker processes (`ranks` of them; one is a plain process) running `job` in `dir` with
// `vars` (NAME=value) set; each rank's metrics go to `metrics`<rank>.jsonl in `dir`.
inline WorkerRun runWorkers(const QString &dir, const QString &job, const QStringList &vars, const QString &metrics,
                            int ranks = 1)
{
    RankJob rankJob;
    rankJob.program = QDir(binDir()).filePath(QStringLiteral("accel-worker"));
    rankJob.arguments = {job};
    rankJob.worldSize = ranks;
    rankJob.rankVariablesWhenAlone = false;
    rankJob.unset = {QStringLiteral("ACCEL_RUN_DIR")};
    rankJob.env = vars;
    rankJob.rankEnv = [&](int rank) {
        return QStringList{QStringLiteral("ACCEL_METRICS_FILE=") +
                           QDir(dir).filePath(metrics + QString::number(rank) + QStringLiteral(".jsonl"))};
    };
    rankJob.workingDirectory = dir;
    rankJob.timeoutMs = 300000;
    WorkerRun run;
    for (const RankOutcome &rank : runRankJob(rankJob)) {
        run.output += rank.out + rank.err;
        run.ok = run.ok && rank.ok();
    }
    return run;
}

// step -> training loss, as the worker logged it (every digit of the double).
inline std::map<int, double> stepLosses(const QString &metricsFile)
{
    std::map<int, double> losses;
    QFile file(metricsFile);
    if (!file.open(QIODevice::ReadOnly))
        return losses;
    for (const QByteArray &line : file.readAll().split('\n')) {
        const QJsonObject object = QJsonDocument::fromJson(line).object();
        if (object.contains(QStringLiteral("loss")))
            losses[object.value(QStringLiteral("step")).toInt()] = object.value(QStringLiteral("loss")).toDouble();
    }
    return losses;
}

} // namespace accel::test::fp8
