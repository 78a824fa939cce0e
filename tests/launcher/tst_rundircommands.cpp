// accel stop, runs and tail against crafted run directories: stop signals only processes it can
// prove belong to the run (not pid 1, not 4294967297, not a start_time of 0, not a live unrelated
// process); symlinks planted in a run directory are never followed (the planted target is left
// untouched and never printed); tail never prints a fragment of a line and skips over-long lines.
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>
#include <unistd.h>

using accel::test::runAccel;

namespace {

QString hostName()
{
    char name[256] = {};
    ::gethostname(name, sizeof(name) - 1);
    return QString::fromLocal8Bit(name);
}

quint64 startTimeOf(qint64 pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos)
        return 0;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    for (int index = 3; index <= 22 && fields >> field; ++index) {
        if (index == 22)
            return std::stoull(field);
    }
    return 0;
}

// A pid that no longer runs (a reaped child's).
qint64 deadPid()
{
    QProcess child;
    child.start(QStringLiteral("true"), QStringList());
    child.waitForStarted(5000);
    const qint64 pid = child.processId(); // 0 once finished: read it while it runs
    child.waitForFinished(5000);
    return pid;
}

QJsonObject supervisor(qint64 pid, qint64 start, const QString &host = hostName())
{
    return {{QStringLiteral("pid"), pid}, {QStringLiteral("start_time"), start}, {QStringLiteral("host"), host}};
}

QJsonObject rank(int index, qint64 pid, qint64 start)
{
    return {{QStringLiteral("rank"), index},
            {QStringLiteral("pid"), pid},
            {QStringLiteral("start_time"), start},
            {QStringLiteral("result"), QStringLiteral("running")}};
}

QString writeRun(const QString &path, const QJsonObject &supervisorRecord, const QJsonArray &ranks,
                 const QString &state = QStringLiteral("running"))
{
    QDir().mkpath(path + QStringLiteral("/logs"));
    QDir().mkpath(path + QStringLiteral("/metrics"));
    const QJsonObject manifest{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                               {QStringLiteral("version"), 1},
                               {QStringLiteral("state"), state},
                               {QStringLiteral("supervisor"), supervisorRecord},
                               {QStringLiteral("ranks"), ranks}};
    QFile file(path + QStringLiteral("/run.json"));
    if (file.open(QIODevice::WriteOnly))
        file.write(QJsonDocument(manifest).toJson());
    return path;
}

QJsonObject manifestOf(const QString &runDir)
{
    QFile file(runDir + QStringLiteral("/run.json"));
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

void writeFile(const QString &path, const QByteArray &content)
{
    QFile file(path);
    if (file.open(QIODevice::WriteOnly))
        file.write(content);
}

} // namespace

class tst_RunDirCommands : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QVERIFY2(QFile::exists(accel::test::binDir() + QStringLiteral("/accel")), "build accel"); }

    // Regression: a supervisor entry with start_time 0 matched any live pid, and a live unrelated
    // process recorded as the supervisor was signalled.
    void stopRefusesAnUnrelatedSupervisor()
    {
        QProcess sleeper;
        sleeper.start(QStringLiteral("sleep"), {QStringLiteral("60")});
        QVERIFY(sleeper.waitForStarted());
        const qint64 pid = sleeper.processId();
        QTemporaryDir dir;
        // Its real pid and start time, but not the group and session recorded (0: its own).
        const QString unrelated = writeRun(dir.filePath(QStringLiteral("unrelated")),
                                           supervisor(pid, static_cast<qint64>(startTimeOf(pid))), {});
        auto result = runAccel({QStringLiteral("stop"), unrelated, QStringLiteral("--timeout"), QStringLiteral("1")});
        QCOMPARE(result.exitCode, 1);
        QVERIFY2(result.err.contains(QStringLiteral("not signalled")), qPrintable(result.err));
        QCOMPARE(sleeper.state(), QProcess::Running);
        // start_time 0 matches nothing: the run reads as lost and nothing is signalled.
        const QString zero = writeRun(dir.filePath(QStringLiteral("zero")), supervisor(pid, 0), {});
        result = runAccel({QStringLiteral("stop"), zero, QStringLiteral("--json")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QCOMPARE(QJsonDocument::fromJson(result.out.toUtf8()).object().value(QStringLiteral("state")).toString(),
                 QStringLiteral("lost"));
        QCOMPARE(sleeper.state(), QProcess::Running);
        sleeper.kill();
        sleeper.waitForFinished();
    }

    // Regression: with the supervisor gone, stop killpg()ed every recorded rank pid: 1 (or
    // 4294967297, truncated to 1) became kill(-1, SIGKILL). An unrelated live process recorded as a
    // rank (start time 0, or not leading its own session) must survive too.
    void stopKillsOnlyProvenRankGroups()
    {
        QProcess sleeper;
        sleeper.start(QStringLiteral("sleep"), {QStringLiteral("60")});
        QVERIFY(sleeper.waitForStarted());
        const qint64 pid = sleeper.processId();
        QTemporaryDir dir;
        const QString run = writeRun(dir.filePath(QStringLiteral("r")), supervisor(deadPid(), 12345),
                                     {rank(0, pid, 0), rank(1, pid, static_cast<qint64>(startTimeOf(pid)))});
        const auto result = runAccel({QStringLiteral("stop"), run});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY2(result.out.contains(QStringLiteral("killed 0")) &&
                     result.out.contains(QStringLiteral("not signalled")),
                 qPrintable(result.out));
        QCOMPARE(sleeper.state(), QProcess::Running);
        QCOMPARE(manifestOf(run).value(QStringLiteral("state")).toString(), QStringLiteral("lost"));
        sleeper.kill();
        sleeper.waitForFinished();
    }

    // Regression (issue 33, item 1): a run.json written by another user copied the public
    // /proc/<pid>/stat fields (start time; group and session: its own) of a root process that
    // leads its own session, and root's accel stop killed it, on the supervisor path and on the
    // rank path. The process's uids must be the run directory's owner.
    void stopRefusesAProcessOfAnotherUser()
    {
        if (::geteuid() != 0)
            QSKIP("needs root: the run directory is given to another user (chown)");
        const uid_t nobody = 65534;
        QProcess victim;
        victim.setChildProcessModifier([] { ::setsid(); }); // leads its own group and session
        victim.start(QStringLiteral("sleep"), {QStringLiteral("60")});
        QVERIFY(victim.waitForStarted());
        const qint64 pid = victim.processId();
        QTRY_VERIFY(startTimeOf(pid) > 0 && ::getsid(pid_t(pid)) == pid_t(pid));
        const qint64 start = static_cast<qint64>(startTimeOf(pid));
        QTemporaryDir dir;
        const auto giveTo = [](const QString &run, uid_t uid) {
            for (const QString &path : {run, run + QStringLiteral("/run.json"), run + QStringLiteral("/logs"),
                                        run + QStringLiteral("/metrics")})
                QVERIFY(::chown(QFile::encodeName(path).constData(), uid, uid) == 0);
        };
        const QString asSupervisor = writeRun(dir.filePath(QStringLiteral("supervisor")), supervisor(pid, start), {});
        giveTo(asSupervisor, nobody);
        auto result =
            runAccel({QStringLiteral("stop"), asSupervisor, QStringLiteral("--timeout"), QStringLiteral("1")});
        QCOMPARE(result.exitCode, 1);
        QVERIFY2(result.err.contains(QStringLiteral("not as the run directory's owner (uid 65534)")),
                 qPrintable(result.err));
        QCOMPARE(victim.state(), QProcess::Running);

        const QString asRank =
            writeRun(dir.filePath(QStringLiteral("rank")), supervisor(deadPid(), 12345), {rank(0, pid, start)});
        giveTo(asRank, nobody);
        result = runAccel({QStringLiteral("stop"), asRank});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY2(result.out.contains(QStringLiteral("killed 0")) &&
                     result.out.contains(QStringLiteral("not as the run directory's owner")),
                 qPrintable(result.out));
        QCOMPARE(victim.state(), QProcess::Running);

        // The same claims in a folder of the process's own user prove it.
        const QString own =
            writeRun(dir.filePath(QStringLiteral("own")), supervisor(deadPid(), 12345), {rank(0, pid, start)});
        result = runAccel({QStringLiteral("stop"), own});
        QVERIFY2(result.out.contains(QStringLiteral("killed 1")), qPrintable(result.out + result.err));
        QVERIFY(victim.waitForFinished(5000));
    }

    // The pids 1 and 4294967297 run in a private pid namespace: if a regression ever signalled
    // them, only the namespace's processes would be hit, and the test would see its canary die.
    void stopNeverSignalsPidOne_data()
    {
        QTest::addColumn<qint64>("pid");
        QTest::newRow("1") << qint64(1);
        QTest::newRow("4294967297") << qint64(4294967297LL);
    }

    void stopNeverSignalsPidOne()
    {
        QFETCH(qint64, pid);
        const QString unshare = QStandardPaths::findExecutable(QStringLiteral("unshare"));
        if (unshare.isEmpty() ||
            accel::test::runProgram(unshare, {QStringLiteral("--user"), QStringLiteral("--map-root-user"),
                                              QStringLiteral("--pid"), QStringLiteral("--fork"),
                                              QStringLiteral("--mount-proc"), QStringLiteral("true")})
                    .exitCode != 0)
            QSKIP(
                "no unprivileged pid namespace here (unshare --user --pid); the pure proof is in tst_processidentity");
        QTemporaryDir dir;
        const QString run =
            writeRun(dir.filePath(QStringLiteral("r")), supervisor(pid, 1), {rank(0, pid, 1), rank(1, 1, 0)});
        // Inside: sh is pid 1, a canary sleeps, accel stop runs; the canary must still be there.
        const QString script =
            QStringLiteral("sleep 30 & canary=$!; \"$0\" stop \"$1\"; code=$?; "
                           "if kill -0 $canary 2>/dev/null; then echo CANARY_ALIVE; fi; kill $canary; exit $code");
        const auto result = accel::test::runProgram(
            unshare,
            {QStringLiteral("--user"), QStringLiteral("--map-root-user"), QStringLiteral("--pid"),
             QStringLiteral("--fork"), QStringLiteral("--mount-proc"), QStringLiteral("sh"), QStringLiteral("-c"),
             script, accel::test::binDir() + QStringLiteral("/accel"), run},
            30000);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY2(result.out.contains(QStringLiteral("CANARY_ALIVE")), qPrintable(result.out + result.err));
        QVERIFY(result.out.contains(QStringLiteral("not signalled")));
    }

    // Regression: launch, runs, tail and stop followed symlinks planted in a run directory (root
    // appended to root-only files through them).
    void plantedSymlinksAreNotFollowed()
    {
        QTemporaryDir dir;
        const QString root = dir.filePath(QStringLiteral("runs"));
        const QString victim = dir.filePath(QStringLiteral("victim.txt"));
        writeFile(victim, "root-only\n");
        const QString secretFolder = dir.filePath(QStringLiteral("secret"));
        QDir().mkpath(secretFolder);
        writeFile(secretFolder + QStringLiteral("/rank0.log"), "SECRET LINE\n");
        // A run with a dead supervisor: runs/stop record "lost" (run.json and an event) there.
        const QString run = writeRun(root + QStringLiteral("/r1"), supervisor(deadPid(), 12345), {});
        QVERIFY(QFile::link(victim, run + QStringLiteral("/events.jsonl")));
        QVERIFY(QDir(run + QStringLiteral("/logs")).removeRecursively());
        QVERIFY(QFile::link(secretFolder, run + QStringLiteral("/logs")));
        QVERIFY(QFile::link(victim, run + QStringLiteral("/metrics/rank0.jsonl")));
        // A run directory that is itself a symlink to a run elsewhere.
        const QString elsewhere = writeRun(dir.filePath(QStringLiteral("elsewhere")), supervisor(deadPid(), 12345), {});
        QVERIFY(QFile::link(elsewhere, root + QStringLiteral("/r2-linked")));

        const auto runs =
            runAccel({QStringLiteral("runs"), QStringLiteral("--json"), QStringLiteral("--runs_root"), root});
        QCOMPARE(runs.exitCode, 0);
        const QJsonArray listed =
            QJsonDocument::fromJson(runs.out.toUtf8()).object().value(QStringLiteral("runs")).toArray();
        QCOMPARE(listed.size(), 1);
        QCOMPARE(listed.at(0).toObject().value(QStringLiteral("state")).toString(), QStringLiteral("lost"));
        const auto tail = runAccel({QStringLiteral("tail"), run});
        QVERIFY(!tail.out.contains(QStringLiteral("SECRET")));
        const auto metrics =
            runAccel({QStringLiteral("tail"), run, QStringLiteral("--metrics"), QStringLiteral("--json")});
        QVERIFY(!metrics.out.contains(QStringLiteral("root-only")));
        const auto follow =
            runAccel({QStringLiteral("tail"), run, QStringLiteral("--follow"), QStringLiteral("--json")}, 20000);
        QCOMPARE(follow.exitCode, 0);
        QVERIFY(!follow.out.contains(QStringLiteral("SECRET")) && !follow.out.contains(QStringLiteral("root-only")));
        const auto stop = runAccel({QStringLiteral("stop"), run});
        QCOMPARE(stop.exitCode, 0);
        QFile check(victim);
        QVERIFY(check.open(QIODevice::ReadOnly));
        QCOMPARE(check.readAll(), QByteArray("root-only\n"));
        const auto linked =
            runAccel({QStringLiteral("tail"), QStringLiteral("r2-linked"), QStringLiteral("--runs_root"), root});
        QCOMPARE(linked.exitCode, 2);
        QVERIFY2(linked.err.contains(QStringLiteral("symlink")), qPrintable(linked.err));
        QCOMPARE(manifestOf(elsewhere).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    }

    // Regression: `accel tail` printed a 256 KB mid-line fragment as a line (the start of its
    // window fell inside a long line), and had no line cap.
    void tailNeverPrintsFragments()
    {
        QTemporaryDir dir;
        const QString run =
            writeRun(dir.filePath(QStringLiteral("r")), supervisor(deadPid(), 1), {}, QStringLiteral("succeeded"));
        const QByteArray longLine = "{\"v\":1,\"loss\":\"" + QByteArray(300 * 1024, 'x') + "\"}\n";
        const QByteArray huge = "{\"v\":1,\"junk\":\"" + QByteArray(2 * 1024 * 1024, 'y') + "\"}\n";
        writeFile(run + QStringLiteral("/metrics/rank0.jsonl"), "{\"v\":1,\"step\":1}\n" + longLine);
        auto result = runAccel({QStringLiteral("tail"), run, QStringLiteral("--metrics")});
        QCOMPARE(result.exitCode, 0);
        // The last 20 lines start before the 256 KB window: the long line is left out, never cut.
        QVERIFY2(!result.out.contains(QLatin1Char('x')) || result.out.contains(QString::fromLatin1(longLine.trimmed())),
                 qPrintable(result.out.left(80)));
        for (const QString &line : result.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            QVERIFY2(line.startsWith(QLatin1Char('{')) && line.endsWith(QLatin1Char('}')), qPrintable(line.left(80)));
        writeFile(run + QStringLiteral("/metrics/rank0.jsonl"),
                  "{\"v\":1,\"step\":1}\n" + huge + "{\"v\":1,\"step\":3}\n");
        result = runAccel({QStringLiteral("tail"), run, QStringLiteral("--metrics"), QStringLiteral("--lines"),
                           QStringLiteral("-1"), QStringLiteral("--json")});
        QCOMPARE(result.exitCode, 0);
        const QJsonArray lines =
            QJsonDocument::fromJson(result.out.toUtf8()).object().value(QStringLiteral("lines")).toArray();
        QCOMPARE(lines.size(), 2);
        QCOMPARE(lines.at(1).toObject().value(QStringLiteral("data")).toObject().value(QStringLiteral("step")).toInt(),
                 3);
        QCOMPARE(result.err.count(QStringLiteral("skipped a line longer than")), 1);
        result = runAccel({QStringLiteral("tail"), run, QStringLiteral("--follow"), QStringLiteral("--json"),
                           QStringLiteral("--metrics")},
                          20000);
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.size() < 64 * 1024);
        QVERIFY(result.out.contains(QStringLiteral("\\\"step\\\":3")));
        QCOMPARE(result.err.count(QStringLiteral("skipped a line longer than")), 1);
    }
};

QTEST_GUILESS_MAIN(tst_RunDirCommands)
#include "tst_rundircommands.moc"
