// The supervisor with real child processes (fakechild): failures take the whole group down,
// SIGTERM-ignoring ranks are killed after the grace period, children of ranks die too,
// restarts are counted, and the run directory records it all.
#include "core/rundir/processidentity.h"
#include "core/rundir/shmsegments.h"
#include "launcher/rundirectory.h"
#include "launcher/runsupervisor.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUuid>
#include <QtTest>

#include <csignal>
#include <sys/resource.h>

using namespace accel::launcher;
using accel::test::processesWithMarker;

namespace {

QString newMarker()
{
    return QStringLiteral("marker-") + QUuid::createUuid().toString(QUuid::Id128);
}

LaunchSettings fakeSettings(const QString &runDir, int ranks, const QStringList &arguments, int maxRestarts = 0)
{
    LaunchSettings settings;
    settings.numProcesses = ranks;
    settings.cpu = true;
    settings.maxRestarts = maxRestarts;
    settings.mainProcessPort = 29999;
    settings.program.kind = ProgramSpec::Kind::Executable;
    settings.program.target = (accel::test::binDir() + QStringLiteral("/fakechild")).toStdString();
    for (const QString &argument : arguments)
        settings.program.args.push_back(argument.toStdString());
    settings.runDirectory = runDir.toStdString();
    settings.workingDirectory = runDir.toStdString();
    return settings;
}

bool waitFor(const std::function<bool()> &condition, int timeoutMs)
{
    QElapsedTimer clock;
    clock.start();
    while (!condition()) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        QThread::msleep(5);
    }
    return true;
}

QStringList events(const RunDirectory &run)
{
    QFile file(run.filePath(QStringLiteral("events.jsonl")));
    QStringList names;
    if (file.open(QIODevice::ReadOnly)) {
        for (const QByteArray &line : file.readAll().split('\n')) {
            if (!line.isEmpty())
                names << QJsonDocument::fromJson(line).object().value(QStringLiteral("event")).toString();
        }
    }
    return names;
}

} // namespace

class tst_RunSupervisor : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(accel::test::binDir() + QStringLiteral("/fakechild")), "build the fakechild target");
    }

    void successWritesLogsAndManifest()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        QVERIFY(run->writeManifest(QJsonObject{{QStringLiteral("id"), QStringLiteral("t")}}));
        RunSupervisor supervisor(fakeSettings(dir.path(), 2,
                                              {QStringLiteral("--print"), QStringLiteral("hello out"),
                                               QStringLiteral("--stderr"), QStringLiteral("hello err")}),
                                 {{"PATH", "/usr/bin"}}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        QVERIFY(finished.wait(10000));
        QCOMPARE(supervisor.outcome().state, QStringLiteral("succeeded"));
        QCOMPARE(supervisor.outcome().exitCode, 0);
        QCOMPARE(supervisor.outcome().ranks.size(), size_t(2));
        for (int rank = 0; rank < 2; ++rank) {
            QFile log(run->logPath(rank));
            QVERIFY(log.open(QIODevice::ReadOnly));
            const QByteArray text = log.readAll();
            QVERIFY2(text.contains("hello out") && text.contains("hello err"), text.constData());
        }
        auto reopened = RunDirectory::open(dir.path());
        QVERIFY(reopened);
        QCOMPARE(reopened->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"));
        QCOMPARE(reopened->manifest().value(QStringLiteral("ranks")).toArray().size(), 2);
        QCOMPARE(events(*reopened), (QStringList{QStringLiteral("started"), QStringLiteral("rank_started"),
                                                 QStringLiteral("rank_started"), QStringLiteral("rank_exited"),
                                                 QStringLiteral("rank_exited"), QStringLiteral("finished")}));
    }

    void killedRankTakesWholeJobDownWithGrandchildren()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        const QString marker = newMarker();
        SupervisorOptions options;
        options.graceMs = 1500;
        RunSupervisor supervisor(fakeSettings(dir.path(), 3,
                                              {QStringLiteral("--marker"), marker, QStringLiteral("--grandchild"),
                                               QStringLiteral("--hang")}),
                                 {}, &*run, options);
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        // 3 ranks + 3 grandchildren.
        QVERIFY2(waitFor([&] { return processesWithMarker(marker).size() == 6; }, 10000), "ranks did not start");
        const qint64 victim = supervisor.rankPids().at(1);
        QElapsedTimer clock;
        clock.start();
        ::kill(static_cast<pid_t>(victim), SIGKILL);
        QVERIFY(finished.wait(5000));
        QVERIFY2(clock.elapsed() < 2000, qPrintable(QStringLiteral("took %1 ms").arg(clock.elapsed())));
        const RunOutcome outcome = supervisor.outcome();
        QCOMPARE(outcome.state, QStringLiteral("failed"));
        QCOMPARE(outcome.failedRank, 1);
        QCOMPARE(outcome.exitCode, 128 + SIGKILL);
        QVERIFY(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 1000));
    }

    // A rank killed with SIGKILL between creating its all-reduce segment and unlinking it (the
    // runtime unlinks once every rank has mapped it) must not leave the segment in /dev/shm.
    void killedRankLeavesNoSharedMemorySegment()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        RunSupervisor supervisor(
            fakeSettings(dir.path(), 2, {QStringLiteral("--shm-segment"), QStringLiteral("--hang")}), {}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        const auto segmentOf = [](qint64 pid) {
            return QStringLiteral("/dev/shm") + QString::fromStdString(accel::rundir::allReduceSegmentName(pid, 1));
        };
        QVERIFY(waitFor(
            [&] {
                const auto started = supervisor.rankPids();
                return started.size() == 2 && started[0] > 0 && started[1] > 0;
            },
            10000));
        const std::vector<qint64> pids = supervisor.rankPids();
        QVERIFY2(waitFor([&] { return QFile::exists(segmentOf(pids[0])) && QFile::exists(segmentOf(pids[1])); }, 10000),
                 "the ranks did not create their segments");
        ::kill(static_cast<pid_t>(pids[0]), SIGKILL);
        QVERIFY(finished.wait(10000));
        QCOMPARE(supervisor.outcome().state, QStringLiteral("failed"));
        QVERIFY2(!QFile::exists(segmentOf(pids[0])), qPrintable(segmentOf(pids[0])));
        QVERIFY2(!QFile::exists(segmentOf(pids[1])), qPrintable(segmentOf(pids[1])));
        QVERIFY(events(*run).contains(QStringLiteral("shared_memory_removed")));
    }

    void sigtermIgnoringRankIsKilledAfterGrace()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        const QString marker = newMarker();
        SupervisorOptions options;
        options.graceMs = 600;
        // Rank 1 fails with exit 3 after a moment; rank 0 ignores SIGTERM and hangs.
        RunSupervisor supervisor(
            fakeSettings(dir.path(), 2,
                         {QStringLiteral("--marker"), marker, QStringLiteral("--ignore-term"),
                          QStringLiteral("--grandchild"), QStringLiteral("--sleep"), QStringLiteral("200"),
                          QStringLiteral("--if-rank"), QStringLiteral("1"), QStringLiteral("--exit"),
                          QStringLiteral("3"), QStringLiteral("--hang")}),
            {}, &*run, options);
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        QSignalSpy exited(&supervisor, &RunSupervisor::rankExited);
        supervisor.start();
        QVERIFY(exited.wait(5000)); // rank 1's failure
        QElapsedTimer clock;
        clock.start();
        QVERIFY(finished.wait(5000));
        QVERIFY2(clock.elapsed() >= 450, qPrintable(QStringLiteral("killed after %1 ms").arg(clock.elapsed())));
        const RunOutcome outcome = supervisor.outcome();
        QCOMPARE(outcome.exitCode, 3);
        QCOMPARE(outcome.failedRank, 1);
        QCOMPARE(outcome.ranks.at(0).signal, SIGKILL);
        QVERIFY(events(*run).contains(QStringLiteral("killed")));
        QVERIFY(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 1000));
    }

    void restartsAreCountedAndExposed()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        const QString envFile = dir.filePath(QStringLiteral("env-{rank}.json"));
        // Attempts 0 and 1 fail on rank 0; attempt 2 succeeds.
        RunSupervisor supervisor(
            fakeSettings(dir.path(), 2,
                         {QStringLiteral("--env-json"), envFile, QStringLiteral("--if-rank"), QStringLiteral("0"),
                          QStringLiteral("--if-attempt-below"), QStringLiteral("2"), QStringLiteral("--exit"),
                          QStringLiteral("5"), QStringLiteral("--sleep"), QStringLiteral("100")},
                         3),
            {}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        QSignalSpy restarting(&supervisor, &RunSupervisor::restarting);
        supervisor.start();
        QVERIFY(finished.wait(15000));
        QCOMPARE(supervisor.outcome().state, QStringLiteral("succeeded"));
        QCOMPARE(supervisor.outcome().restarts, 2);
        QCOMPARE(restarting.size(), 2);
        QFile env(dir.filePath(QStringLiteral("env-1.json")));
        QVERIFY(env.open(QIODevice::ReadOnly));
        const QJsonObject vars = QJsonDocument::fromJson(env.readAll()).object();
        QCOMPARE(vars.value(QStringLiteral("TORCHELASTIC_RESTART_COUNT")).toString(), QStringLiteral("2"));
        QCOMPARE(vars.value(QStringLiteral("TORCHELASTIC_MAX_RESTARTS")).toString(), QStringLiteral("3"));
        QCOMPARE(events(*run).count(QStringLiteral("restarting")), 2);
        QFile log(run->logPath(0));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY(log.readAll().contains("==== accel: restart 2 ===="));
        QCOMPARE(run->manifest().value(QStringLiteral("restarts")).toInt(), 2);
    }

    void restartsExhaustedReportFirstFailure()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        RunSupervisor supervisor(fakeSettings(dir.path(), 2,
                                              {QStringLiteral("--if-rank"), QStringLiteral("1"),
                                               QStringLiteral("--exit"), QStringLiteral("7"), QStringLiteral("--hang")},
                                              1),
                                 {}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        QVERIFY(finished.wait(15000));
        QCOMPARE(supervisor.outcome().state, QStringLiteral("failed"));
        QCOMPARE(supervisor.outcome().exitCode, 7);
        QCOMPARE(supervisor.outcome().failedRank, 1);
        QCOMPARE(supervisor.outcome().restarts, 1);
        QCOMPARE(run->manifest().value(QStringLiteral("exit_code")).toInt(), 7);
    }

    void crashIsReportedAsSignal()
    {
        QTemporaryDir dir;
        RunSupervisor supervisor(fakeSettings(dir.path(), 2,
                                              {QStringLiteral("--if-rank"), QStringLiteral("0"),
                                               QStringLiteral("--abort"), QStringLiteral("--hang")}),
                                 {}, nullptr, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        QVERIFY(finished.wait(10000));
        QCOMPARE(supervisor.outcome().exitCode, 128 + SIGABRT);
        QVERIFY(supervisor.outcome().ranks.at(0).describe().contains(QStringLiteral("SIGABRT")));
        QCOMPARE(supervisor.outcome().ranks.at(1).signal, SIGTERM);
    }

    void stopEndsEveryProcess()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        const QString marker = newMarker();
        RunSupervisor supervisor(fakeSettings(dir.path(), 2,
                                              {QStringLiteral("--marker"), marker, QStringLiteral("--grandchild"),
                                               QStringLiteral("--hang")}),
                                 {}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        QVERIFY(waitFor([&] { return processesWithMarker(marker).size() == 4; }, 10000));
        supervisor.stop(QStringLiteral("test"));
        QVERIFY(finished.wait(5000));
        QCOMPARE(supervisor.outcome().state, QStringLiteral("stopped"));
        QVERIFY(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 1000));
        QCOMPARE(run->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("stopped"));
    }

    // A rank that fails once the user's stop is requested in the run folder (accel stop writes the
    // request before its signal; accel hosts stop on every node before any signal) ended because of
    // the stop: the run ends "stopped" and says why. The signal that follows is not a second one:
    // rank 0, which ignores SIGTERM, still gets its grace period (the "killed" event).
    void failureAfterTheStopRequestEndsStopped()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        const QString marker = newMarker();
        SupervisorOptions options;
        options.graceMs = 600;
        RunSupervisor supervisor(
            fakeSettings(dir.path(), 2,
                         {QStringLiteral("--marker"), marker, QStringLiteral("--ignore-term"),
                          QStringLiteral("--sleep"), QStringLiteral("300"), QStringLiteral("--if-rank"),
                          QStringLiteral("1"), QStringLiteral("--exit"), QStringLiteral("3"),
                          QStringLiteral("--hang")}),
            {}, &*run, options);
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        QSignalSpy exited(&supervisor, &RunSupervisor::rankExited);
        supervisor.start();
        QVERIFY(run->requestStop(QStringLiteral("test")));
        QVERIFY(run->stopRequested());
        QVERIFY(exited.wait(5000)); // rank 1, after the request
        supervisor.stop(QStringLiteral("supervisor received SIGINT"));
        QVERIFY(finished.wait(5000));
        const RunOutcome outcome = supervisor.outcome();
        QCOMPARE(outcome.state, QStringLiteral("stopped"));
        QCOMPARE(outcome.exitCode, 130);
        QVERIFY2(outcome.reason.contains(QStringLiteral("rank 1 ended after the stop was requested (exit 3)")),
                 qPrintable(outcome.reason));
        QVERIFY(events(*run).contains(QStringLiteral("killed")));
        QVERIFY(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 1000));
    }

    // Ctrl-C before the supervisor started anything: a clean "stopped", and start() starts nothing.
    void stopBeforeStartEndsStopped()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        const QString marker = newMarker();
        RunSupervisor supervisor(
            fakeSettings(dir.path(), 1, {QStringLiteral("--marker"), marker, QStringLiteral("--hang")}), {}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.stop(QStringLiteral("supervisor received SIGINT"));
        QCOMPARE(finished.size(), 1);
        supervisor.start();
        QCOMPARE(finished.size(), 1);
        QCOMPARE(supervisor.outcome().state, QStringLiteral("stopped"));
        QCOMPARE(supervisor.outcome().exitCode, 130);
        QVERIFY(processesWithMarker(marker).isEmpty());
        QCOMPARE(run->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("stopped"));
    }

    // `accel stop` proves a rank by pid and start time: both are in run.json.
    void rankStartTimesAreRecorded()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        RunSupervisor supervisor(fakeSettings(dir.path(), 2, {QStringLiteral("--hang")}), {}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        const QJsonArray ranks = run->manifest().value(QStringLiteral("ranks")).toArray();
        QCOMPARE(ranks.size(), 2);
        for (const QJsonValue &rank : ranks) {
            const qint64 pid = rank.toObject().value(QStringLiteral("pid")).toInteger();
            QVERIFY(pid > 1);
            QCOMPARE(static_cast<quint64>(rank.toObject().value(QStringLiteral("start_time")).toInteger()),
                     accel::rundir::processStartTime(pid));
        }
        const accel::rundir::SupervisorRecord self = run->supervisor();
        QCOMPARE(self.pid, std::int64_t(QCoreApplication::applicationPid()));
        QVERIFY(self.startTime > 0 && self.processGroup >= 0 && self.session >= 0 && !self.host.empty());
        supervisor.stop(QStringLiteral("test"));
        QVERIFY(finished.wait(5000));
    }

    // A full disk used to truncate rank logs silently while the run "succeeded". A file-size
    // limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes log writes fail the way ENOSPC does.
    void fullDiskFailsTheRunWithReason()
    {
        QTemporaryDir dir;
        auto run = RunDirectory::create(dir.path());
        QVERIFY(run);
        rlimit saved{};
        QVERIFY(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
        const auto previousHandler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit small = saved;
        small.rlim_cur = 64 * 1024;
        QVERIFY(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        RunSupervisor supervisor(
            fakeSettings(dir.path(), 1, {QStringLiteral("--lines"), QStringLiteral("40000"), QStringLiteral("--hang")}),
            {}, &*run, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        const bool ended = finished.wait(10000);
        ::setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, previousHandler);
        QVERIFY(ended);
        QCOMPARE(supervisor.outcome().state, QStringLiteral("failed"));
        QCOMPARE(supervisor.outcome().exitCode, kLogWriteFailedExitCode);
        QVERIFY2(supervisor.outcome().reason.contains(QStringLiteral("rank 0 log")),
                 qPrintable(supervisor.outcome().reason));
        QVERIFY(supervisor.outcome().reason.contains(QStringLiteral("logs/rank0.log")));
        auto reopened = RunDirectory::open(run->path());
        QVERIFY(reopened);
        QCOMPARE(reopened->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        const QJsonArray states = reopened->manifest().value(QStringLiteral("states")).toArray();
        QVERIFY(
            states.last().toObject().value(QStringLiteral("detail")).toString().contains(QStringLiteral("rank 0 log")));
        QVERIFY(events(*run).contains(QStringLiteral("log_write_failed")));
    }

    void missingProgramFailsCleanly()
    {
        QTemporaryDir dir;
        LaunchSettings settings = fakeSettings(dir.path(), 1, {});
        settings.program.target = "/nonexistent/program";
        RunSupervisor supervisor(settings, {}, nullptr, {});
        QSignalSpy finished(&supervisor, &RunSupervisor::finished);
        supervisor.start();
        QVERIFY(finished.size() == 1 || finished.wait(5000));
        QCOMPARE(supervisor.outcome().state, QStringLiteral("failed"));
        QCOMPARE(supervisor.outcome().exitCode, 127);
    }
};

QTEST_GUILESS_MAIN(tst_RunSupervisor)
#include "tst_runsupervisor.moc"
