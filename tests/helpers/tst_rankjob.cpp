// The test helper that starts rank processes on loopback: each rank gets the torchrun variables
// and its own, a program that cannot start and a rank that outlives its timeout are failures, and
// failures() names each failed rank's exit.
#include "tests/helpers/rankjob.h"

#include <QTest>

using namespace accel::test;

class tst_RankJob : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void ranksGetTheirVariablesAndExitCodes()
    {
        RankJob job;
        job.program = QStringLiteral("/bin/sh");
        job.arguments = {QStringLiteral("-c"), QStringLiteral("echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE "
                                                              "$MASTER_ADDR $MASTER_PORT $OMP_NUM_THREADS $MINE; "
                                                              "echo oops >&2; exit $RANK")};
        job.worldSize = 3;
        job.localWorldSize = 2;
        job.port = 29555;
        job.rankEnv = [](int rank) { return QStringList{QStringLiteral("MINE=r%1").arg(rank)}; };
        const QList<RankOutcome> ranks = runRankJob(job);
        QCOMPARE(ranks.size(), 3);
        QCOMPARE(ranks[2].out, QStringLiteral("2 0 3 2 127.0.0.1 29555 1 r2\n"));
        QVERIFY(ranks[0].ok());
        QCOMPARE(ranks[1].exitCode, 1);
        QVERIFY(!ranks[1].ok());
        QCOMPARE(failures(ranks), QStringLiteral("exit 1: oops\n\nexit 2: oops\n\n"));
    }

    void aProgramThatCannotStartFails()
    {
        RankJob job;
        job.program = QStringLiteral("/nonexistent/accel-worker");
        job.worldSize = 2;
        const QList<RankOutcome> ranks = runRankJob(job);
        QCOMPARE(ranks.size(), 2);
        for (const RankOutcome &rank : ranks) {
            QVERIFY(!rank.started);
            QVERIFY(!rank.ok());
        }
        QVERIFY2(failures(ranks).contains(QStringLiteral("/nonexistent/accel-worker: cannot start")),
                 qPrintable(failures(ranks)));
    }

    void aRankPastItsTimeoutIsKilled()
    {
        RankJob job;
        job.program = QStringLiteral("/bin/sleep");
        job.arguments = {QStringLiteral("30")};
        job.timeoutMs = 300;
        const QList<RankOutcome> ranks = runRankJob(job);
        QCOMPARE(ranks.size(), 1);
        QVERIFY(ranks[0].timedOut);
        QVERIFY(failures(ranks).startsWith(QStringLiteral("timed out: ")));
    }
};

QTEST_GUILESS_MAIN(tst_RankJob)
#include "tst_rankjob.moc"
