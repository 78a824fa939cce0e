// Which processes `accel stop` may signal, on real processes: pids that are not ours (1,
// 4294967297, a recorded start time of 0, a live unrelated process, a reused pid) are refused
// before any signal; a proven rank's group goes down with the grandchild it forked.
#include "core/rundir/processidentity.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QProcess>
#include <QUuid>
#include <QtTest>

#include <algorithm>
#include <csignal>
#include <unistd.h>

using namespace accel::rundir;

using accel::test::waitFor;

class tst_ProcessIdentity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void impossiblePidsAreRefused_data()
    {
        QTest::addColumn<qint64>("pid");
        QTest::addColumn<qint64>("start");
        QTest::newRow("pid 1") << qint64(1) << qint64(1);
        QTest::newRow("pid 4294967297 (1 as pid_t)") << qint64(4294967297LL) << qint64(1);
        QTest::newRow("pid 0") << qint64(0) << qint64(1);
        QTest::newRow("pid -1") << qint64(-1) << qint64(1);
        QTest::newRow("start_time 0") << qint64(::getpid()) << qint64(0);
    }

    void impossiblePidsAreRefused()
    {
        QFETCH(qint64, pid);
        QFETCH(qint64, start);
        auto proven = ProvenProcess::prove({pid, static_cast<std::uint64_t>(start)}, ::geteuid());
        QVERIFY(!proven);
        QCOMPARE(proven.error().code, accel::ErrorCode::InvalidInput);
    }

    void unrelatedLiveProcessIsRefused()
    {
        QProcess sleeper;
        sleeper.start(QStringLiteral("sleep"), {QStringLiteral("30")});
        QVERIFY(sleeper.waitForStarted());
        const qint64 pid = sleeper.processId();
        const std::uint64_t start = processStartTime(pid);
        QVERIFY(start > 0);
        // Its own pid and start time, but not a group and session of its own (a rank's are).
        auto notLeader = ProvenProcess::prove({pid, start}, ::geteuid());
        QVERIFY(!notLeader);
        QCOMPARE(notLeader.error().code, accel::ErrorCode::Failed);
        QVERIFY(QString::fromStdString(notLeader.error().message).contains(QStringLiteral("process group")));
        // A pid reused by another process: the start time differs.
        auto reused = ProvenProcess::prove({pid, start + 1, ::getpgrp(), ::getsid(0)}, ::geteuid());
        QVERIFY(!reused);
        QVERIFY(QString::fromStdString(reused.error().message).contains(QStringLiteral("start time")));
        QCOMPARE(sleeper.state(), QProcess::Running); // nothing was signalled
        // With the group and session it really has, it is proven (the supervisor record's case).
        auto proven = ProvenProcess::prove({pid, start, ::getpgrp(), ::getsid(0)}, ::geteuid());
        QVERIFY2(proven, proven ? "" : proven.error().toString().c_str());
        QVERIFY(proven->isAlive());
        QVERIFY(!proven->signalGroup(SIGTERM)); // not the leader of its group: never killpg
        QVERIFY(proven->signal(SIGTERM));
        QVERIFY(proven->waitExited(5000));
        QVERIFY(sleeper.waitForFinished(5000));
        QVERIFY(!proven->isAlive());
    }

    // The start time, group and session of any process are public (/proc/<pid>/stat): a claim
    // copying them is refused unless the process runs as the run directory's owner.
    void processOfAnotherOwnerIsRefused()
    {
        QProcess leader;
        leader.setChildProcessModifier([] { ::setsid(); });
        leader.start(QStringLiteral("sleep"), {QStringLiteral("30")});
        QVERIFY(leader.waitForStarted());
        const qint64 pid = leader.processId();
        QTRY_VERIFY(::getsid(pid_t(pid)) == pid_t(pid));
        const ProcessClaim claim{pid, processStartTime(pid)};
        const std::uint32_t other = ::geteuid() == 65534 ? 65533 : 65534;
        auto refused = ProvenProcess::prove(claim, other);
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, accel::ErrorCode::Failed);
        QVERIFY2(QString::fromStdString(refused.error().message)
                     .contains(QStringLiteral("not as the run directory's owner (uid %1)").arg(other)),
                 refused.error().message.c_str());
        QCOMPARE(leader.state(), QProcess::Running);
        const auto uids = processUids(pid);
        QVERIFY(uids);
        QCOMPARE((*uids)[0], std::uint32_t(::geteuid()));
        auto proven = ProvenProcess::prove(claim, ::geteuid());
        QVERIFY2(proven, proven ? "" : proven.error().toString().c_str());
        QVERIFY(proven->signalGroup(SIGKILL));
        QVERIFY(leader.waitForFinished(5000));
    }

    // childProcesses: this process's children by /proc's parent field, zombies included.
    void childrenAreFoundByTheirParent()
    {
        QProcess sleeper;
        sleeper.start(QStringLiteral("sleep"), {QStringLiteral("30")});
        QVERIFY(sleeper.waitForStarted());
        const std::int64_t pid = sleeper.processId();
        auto children = childProcesses(::getpid());
        QVERIFY(std::find(children.begin(), children.end(), pid) != children.end());
        QVERIFY(childProcesses(pid).empty());
        QCOMPARE(readAnyProcessStat(pid)->parent, std::int64_t(::getpid()));
        sleeper.kill();
        QVERIFY(sleeper.waitForFinished(5000));
        children = childProcesses(::getpid());
        QVERIFY(std::find(children.begin(), children.end(), pid) == children.end());
    }

    void exitedProcessIsNotFound()
    {
        QProcess child;
        child.start(QStringLiteral("true"), QStringList());
        QVERIFY(child.waitForStarted(5000));
        const qint64 pid = child.processId(); // 0 once finished: read it while it runs
        QVERIFY(child.waitForFinished(5000));
        auto gone = ProvenProcess::prove({pid, 12345}, ::geteuid());
        QVERIFY(!gone);
        QCOMPARE(gone.error().code, accel::ErrorCode::NotFound);
    }

    void provenRankGroupDiesWithItsGrandchild()
    {
        const QString fakechild = accel::test::binDir() + QStringLiteral("/fakechild");
        QVERIFY2(QFile::exists(fakechild), "build the fakechild target");
        const QString marker = QUuid::createUuid().toString(QUuid::WithoutBraces);
        QProcess rank;
        rank.setChildProcessModifier([] { ::setsid(); }); // as RankProcess starts ranks
        rank.start(fakechild,
                   {QStringLiteral("--marker"), marker, QStringLiteral("--grandchild"), QStringLiteral("--hang")});
        QVERIFY(rank.waitForStarted());
        QVERIFY(waitFor(
            [&] { return accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).size() == 2; }, 10000));
        const qint64 pid = rank.processId();
        auto proven = ProvenProcess::prove({pid, processStartTime(pid)}, ::geteuid());
        QVERIFY2(proven, proven ? "" : proven.error().toString().c_str());
        QVERIFY(proven->signalGroup(SIGKILL));
        QVERIFY(rank.waitForFinished(5000));
        QVERIFY(waitFor([&] { return accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).isEmpty(); },
                        10000));
    }
};

QTEST_GUILESS_MAIN(tst_ProcessIdentity)
#include "tst_processidentity.moc"
