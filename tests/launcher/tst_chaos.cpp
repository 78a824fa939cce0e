// Chaos tests: SIGKILL at seeded random moments through the real `accel launch` (and the studio's
// Launch page, for the kill of the studio itself), then proof that nothing of the run is left (no
// process with the run's marker, no /dev/shm segment named after a rank, no listener on the run's
// port) and that run.json / `accel runs --json` tell the truth.
// ACCEL_CHAOS_CYCLES sets the cycles per scenario (default 3), ACCEL_CHAOS_SEED replays a seed. The
// long mode, 50 cycles of each scenario, runs the binary itself (ctest stops tst_chaos after 900 s):
//   ACCEL_CHAOS_CYCLES=50 build/tests/tst_chaos [scenario]
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using accel::test::newMarker;
using accel::test::processesWithMarker;
using accel::test::runAccel;
using accel::test::waitFor;

namespace {

QString program(const char *name)
{
    return accel::test::binDir() + QLatin1Char('/') + QLatin1String(name);
}

int cycles()
{
    const int wanted = qEnvironmentVariableIntValue("ACCEL_CHAOS_CYCLES");
    return wanted > 0 ? wanted : 3;
}

QJsonObject manifestOf(const QString &runDir)
{
    QFile file(runDir + QStringLiteral("/run.json"));
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

QString stateOf(const QString &runDir)
{
    return manifestOf(runDir).value(QStringLiteral("state")).toString();
}

// The pids of the current attempt's ranks, once every rank has one.
QList<qint64> rankPids(const QString &runDir, int ranks)
{
    QList<qint64> pids;
    for (const QJsonValue &rank : manifestOf(runDir).value(QStringLiteral("ranks")).toArray()) {
        if (const qint64 pid = rank.toObject().value(QStringLiteral("pid")).toInteger(); pid > 1)
            pids << pid;
    }
    return pids.size() == ranks ? pids : QList<qint64>();
}

// Every rank of every attempt, from events.jsonl.
QList<qint64> everyRankPid(const QString &runDir)
{
    QList<qint64> pids;
    QFile file(runDir + QStringLiteral("/events.jsonl"));
    if (!file.open(QIODevice::ReadOnly))
        return pids;
    for (const QByteArray &line : file.readAll().split('\n')) {
        const QJsonObject event = QJsonDocument::fromJson(line).object();
        if (event.value(QStringLiteral("event")).toString() == QLatin1String("rank_started"))
            pids << event.value(QStringLiteral("pid")).toInteger();
    }
    return pids;
}

// /dev/shm entries named after one of the pids (core/rundir/shmsegments.h).
QStringList segmentsOf(const QList<qint64> &pids)
{
    QStringList found;
    const QStringList names = QDir(QStringLiteral("/dev/shm")).entryList(QDir::Files | QDir::System);
    for (const qint64 pid : pids) {
        const QString prefix = QStringLiteral("accel-allreduce-%1-").arg(pid);
        for (const QString &name : names) {
            if (name.startsWith(prefix))
                found << name;
        }
    }
    return found;
}

// Whether anything listens on the TCP port (IPv4 or IPv6).
bool listensOn(int port)
{
    const QString hexPort = QStringLiteral(":%1").arg(port, 4, 16, QLatin1Char('0')).toUpper();
    for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        QFile file{QString::fromLatin1(table)};
        if (!file.open(QIODevice::ReadOnly))
            continue;
        for (const QByteArray &line : file.readAll().split('\n')) {
            const QList<QByteArray> fields = line.simplified().split(' ');
            if (fields.size() > 3 && fields.at(1).endsWith(hexPort.toLatin1()) && fields.at(3) == "0A")
                return true;
        }
    }
    return false;
}

int masterPortOf(const QString &runDir)
{
    const QJsonArray plan = manifestOf(runDir).value(QStringLiteral("plan")).toArray();
    return plan.isEmpty() ? 0
                          : plan.at(0)
                                .toObject()
                                .value(QStringLiteral("env"))
                                .toObject()
                                .value(QStringLiteral("MASTER_PORT"))
                                .toString()
                                .toInt();
}

QString stateInRunsList(const QString &runsRoot, const QString &runDir)
{
    const auto runs =
        runAccel({QStringLiteral("runs"), QStringLiteral("--json"), QStringLiteral("--runs_root"), runsRoot});
    const QString id = QFileInfo(runDir).fileName();
    for (const QJsonValue &run :
         QJsonDocument::fromJson(runs.out.toUtf8()).object().value(QStringLiteral("runs")).toArray()) {
        if (run.toObject().value(QStringLiteral("id")).toString() == id)
            return run.toObject().value(QStringLiteral("state")).toString();
    }
    return QStringLiteral("<not listed: %1>").arg(runs.err);
}

// Two fakechild ranks that each fork a grandchild; after a random pause each creates a shared-memory
// segment named after itself, so a kill may land before or after it.
QStringList fakeRanks(const QString &runDir, const QString &marker, int pauseMs)
{
    return {QStringLiteral("--cpu"),
            QStringLiteral("--num_processes"),
            QStringLiteral("2"),
            QStringLiteral("--run_dir"),
            runDir,
            QStringLiteral("--grace_period"),
            QStringLiteral("1"),
            QStringLiteral("--no_python"),
            program("fakechild"),
            QStringLiteral("--marker"),
            marker,
            QStringLiteral("--grandchild"),
            QStringLiteral("--sleep"),
            QString::number(pauseMs),
            QStringLiteral("--shm-segment"),
            QStringLiteral("--hang")};
}

// Whether the process exists and has not exited (an exited one waits as a zombie until its new
// parent, outside the test, reaps it).
bool runs(pid_t pid)
{
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly))
        return false;
    const QByteArray text = stat.readAll();
    const qsizetype end = text.lastIndexOf(')'); // the name may hold spaces and parentheses
    return end > 0 && text.size() > end + 2 && text.at(end + 2) != 'Z' && text.at(end + 2) != 'X';
}

QByteArray fileBytes(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class tst_Chaos : public QObject {
    Q_OBJECT

    QRandomGenerator m_random;
    quint32 m_seed = 0;

    // Nothing left of the run: no rank or grandchild, no supervisor or reaper (their command lines
    // carry the marker too), no segment of any rank; the caller checks state.
    void expectNothingLeft(const QString &runDir, const QString &marker, const QString &rankProgram)
    {
        QVERIFY2(waitFor([&] { return processesWithMarker(marker, rankProgram).isEmpty(); }, 10000),
                 qPrintable(QStringLiteral("seed %1: a %2 with the marker survived").arg(m_seed).arg(rankProgram)));
        QVERIFY2(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 10000),
                 qPrintable(QStringLiteral("seed %1: %2 process(es) of the run survived (supervisor or reaper)")
                                .arg(m_seed)
                                .arg(processesWithMarker(marker).size())));
        const QList<qint64> pids = everyRankPid(runDir);
        QVERIFY(!pids.isEmpty());
        QVERIFY2(
            waitFor([&] { return segmentsOf(pids).isEmpty(); }, 5000),
            qPrintable(QStringLiteral("seed %1: shared memory left: %2").arg(m_seed).arg(segmentsOf(pids).join(u' '))));
    }

    // kill -9 of the supervisor (`group`: of its whole process group); `detach`: started with --detach.
    void killSupervisorCycle(bool detach, bool group)
    {
        QTemporaryDir dir;
        const QString root = dir.filePath(QStringLiteral("runs"));
        QVERIFY(QDir().mkpath(root));
        const QString runDir = root + QStringLiteral("/chaos-%1").arg(m_random.bounded(1 << 30));
        const QString marker = newMarker();
        const int pause = int(m_random.bounded(200));
        QStringList arguments = QStringList{QStringLiteral("launch")} + fakeRanks(runDir, marker, pause);
        if (detach)
            arguments.insert(1, QStringLiteral("--detach"));
        QProcess launch;
        launch.setChildProcessModifier([] { ::setpgid(0, 0); }); // a job of its own, as a shell makes it
        launch.start(program("accel"), arguments);
        QVERIFY(launch.waitForStarted());
        if (detach) {
            QVERIFY(launch.waitForFinished(20000));
            QCOMPARE(launch.exitCode(), 0);
        }
        QVERIFY(waitFor([&] { return !rankPids(runDir, 2).isEmpty(); }, 15000));
        QThread::msleep(m_random.bounded(300));
        const QJsonObject supervisor = manifestOf(runDir).value(QStringLiteral("supervisor")).toObject();
        const auto pid = static_cast<pid_t>(supervisor.value(QStringLiteral("pid")).toInteger());
        const auto pgid = static_cast<pid_t>(supervisor.value(QStringLiteral("process_group")).toInteger());
        QVERIFY(pid > 1 && pgid > 1);
        QVERIFY(group ? ::kill(-pgid, SIGKILL) == 0 : ::kill(pid, SIGKILL) == 0);
        if (!detach)
            QVERIFY(launch.waitForFinished(5000));
        expectNothingLeft(runDir, marker, QStringLiteral("fakechild"));
        QVERIFY2(
            waitFor([&] { return stateInRunsList(root, runDir) == QLatin1String("lost"); }, 5000),
            qPrintable(
                QStringLiteral("seed %1: accel runs --json says %2").arg(m_seed).arg(stateInRunsList(root, runDir))));
        QCOMPARE(stateOf(runDir), QStringLiteral("lost")); // the reader recorded it
    }

    // A tiny GPT job writing into outputDir, checkpointing every 2 steps.
    QString writeJob(const QString &folder, const QString &outputDir, int maxSteps = 200, int checkpointEvery = 2)
    {
        QFile corpus(folder + QStringLiteral("/corpus.txt"));
        if (!corpus.exists() && corpus.open(QIODevice::WriteOnly)) {
            QRandomGenerator text(1234);
            for (int i = 0; i < 4000; ++i)
                corpus.write(QByteArray("the quick brown fox jumps over a lazy dog ").mid(text.bounded(30), 12));
        }
        const QString path = folder + QStringLiteral("/job-%1.yaml").arg(QFileInfo(outputDir).fileName());
        QFile job(path);
        if (job.open(QIODevice::WriteOnly))
            job.write(QStringLiteral("recipe: gpt\n"
                                     "name: chaos\n"
                                     "seed: 7\n"
                                     "output_dir: %1\n"
                                     "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16, dropout: 0.0}\n"
                                     "data: {corpus: %2/corpus.txt, eval_fraction: 0.05}\n"
                                     "training:\n"
                                     "  max_steps: %3\n"
                                     "  batch_size: 4\n"
                                     "  learning_rate: 1.0e-3\n"
                                     "  log_every: 5\n"
                                     "  checkpoint_every: %4\n"
                                     "  resume: auto\n"
                                     "  timeout_s: 30\n"
                                     "sample: {prompt: \"the \", length: 8}\n")
                          .arg(outputDir, folder)
                          .arg(maxSteps)
                          .arg(checkpointEvery)
                          .toUtf8());
        return path;
    }

    struct Launched {
        int exitCode = -1;
        QString runDir;
    };

    Launched launchJob(const QString &folder, const QString &job, const QString &name)
    {
        Launched result;
        result.runDir = folder + QLatin1Char('/') + name;
        const auto run = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                                   QStringLiteral("2"), QStringLiteral("--main_process_port"), QStringLiteral("0"),
                                   QStringLiteral("--grace_period"), QStringLiteral("1"), QStringLiteral("--run_dir"),
                                   result.runDir, QStringLiteral("--no_mirror"), QStringLiteral("--job"), job},
                                  300000);
        result.exitCode = run.exitCode;
        return result;
    }

    // The run directory the studio created under `root` (it names it itself), once run.json is there.
    static QString onlyRunIn(const QString &root)
    {
        const QStringList runs = QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
        if (runs.size() != 1 ||
            !QFileInfo::exists(root + QLatin1Char('/') + runs.first() + QStringLiteral("/run.json")))
            return {};
        return root + QLatin1Char('/') + runs.first();
    }

    // One cycle of scenario 5; `folder` holds the studio's settings, runs and the job.
    void killStudioCycle(int cycle, const QString &folder)
    {
        const QString data = folder + QStringLiteral("/data");
        const QString root = data + QStringLiteral("/accel-studio/runs");
        const QString config = folder + QStringLiteral("/cluster.yaml");
        QFile configFile(config);
        QVERIFY(configFile.open(QIODevice::WriteOnly));
        configFile.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nmixed_precision: 'no'\n"
                         "num_machines: 1\nnum_processes: 2\nuse_cpu: true\nmain_process_port: 0\n");
        configFile.close();
        // Long enough to outlive the studio's kill (up to 1.5 s after the click) and the checks after
        // it on a quiet machine, where 300 steps had ended ('state succeeded after the studio died').
        const QString job = writeJob(folder, folder + QStringLiteral("/output"), 3000, 0);
        QProcess studio;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_DATA_HOME"), data);
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), folder + QStringLiteral("/config"));
        env.insert(QStringLiteral("XDG_CACHE_HOME"), folder + QStringLiteral("/cache"));
        // The studio's own temporary files (the job it writes for estimate-memory) stay in the
        // test's folder: killed with SIGKILL, the studio cannot remove them itself.
        QVERIFY(QDir().mkpath(folder + QStringLiteral("/tmp")));
        env.insert(QStringLiteral("TMPDIR"), folder + QStringLiteral("/tmp"));
        studio.setProcessEnvironment(env);
        studio.start(program("studiolaunchchild"), {QStringLiteral("--job"), job, QStringLiteral("--config"), config});
        QVERIFY(studio.waitForStarted());
        QByteArray said;
        QVERIFY2(waitFor(
                     [&] {
                         studio.waitForReadyRead(10);
                         said += studio.readAllStandardOutput();
                         return said.contains("clicked") || studio.state() == QProcess::NotRunning;
                     },
                     30000),
                 qPrintable(QString::fromUtf8(said + studio.readAllStandardError())));
        QVERIFY2(said.contains("clicked"), qPrintable(QString::fromUtf8(said + studio.readAllStandardError())));
        // A random moment of the next 1.5 s: while `accel launch --detach` runs (its answer, the
        // run directory, reaches the studio some 0.1-0.5 s after the click) or while the studio follows
        // the run on its Runs page.
        QThread::msleep(m_random.bounded(1500));
        studio.waitForReadyRead(1); // takes in what the pipe holds
        said += studio.readAllStandardOutput();
        const bool answered = said.contains("launched ");
        QVERIFY(::kill(static_cast<pid_t>(studio.processId()), SIGKILL) == 0);
        QVERIFY(studio.waitForFinished(5000));
        QCOMPARE(studio.exitStatus(), QProcess::CrashExit);

        // The run goes on without the studio: its supervisor and both ranks are there. Or the launch
        // never got going: the studio started `accel launch` with PR_SET_PDEATHSIG (SIGTERM), which
        // ends it when the studio dies before it blocks stop signals, a few milliseconds after exec;
        // then nothing may be left running and no run may be listed as live.
        QString runDir;
        QVERIFY2(waitFor(
                     [&] {
                         runDir = onlyRunIn(root);
                         return !runDir.isEmpty() || processesWithMarker(folder).isEmpty();
                     },
                     20000),
                 qPrintable(QStringLiteral("seed %1 cycle %2: no run.json under %3 and processes still there")
                                .arg(m_seed)
                                .arg(cycle)
                                .arg(root)));
        if (runDir.isEmpty()) {
            const auto runs =
                runAccel({QStringLiteral("runs"), QStringLiteral("--json"), QStringLiteral("--runs_root"), root});
            for (const QJsonValue &run :
                 QJsonDocument::fromJson(runs.out.toUtf8()).object().value(QStringLiteral("runs")).toArray()) {
                const QString state = run.toObject().value(QStringLiteral("state")).toString();
                QVERIFY2(state != QLatin1String("running") && state != QLatin1String("starting"),
                         qPrintable(QStringLiteral("seed %1 cycle %2: an aborted launch is listed %3")
                                        .arg(m_seed)
                                        .arg(cycle)
                                        .arg(state)));
            }
            qInfo("cycle %d: studio killed while accel launch was starting; no run was started, nothing left", cycle);
            return;
        }
        QVERIFY2(waitFor([&] { return !rankPids(runDir, 2).isEmpty(); }, 30000),
                 qPrintable(QStringLiteral("seed %1 cycle %2: ranks never started (state %3)")
                                .arg(m_seed)
                                .arg(cycle)
                                .arg(stateOf(runDir))));
        QVERIFY2(waitFor([&] { return stateOf(runDir) == QLatin1String("running"); }, 10000),
                 qPrintable(QStringLiteral("seed %1 cycle %2: state %3 after the studio died")
                                .arg(m_seed)
                                .arg(cycle)
                                .arg(stateOf(runDir))));
        const auto supervisor = static_cast<pid_t>(
            manifestOf(runDir).value(QStringLiteral("supervisor")).toObject().value(QStringLiteral("pid")).toInteger());
        QVERIFY(supervisor > 1 && runs(supervisor));
        QCOMPARE(stateInRunsList(root, runDir), QStringLiteral("running"));

        // It ends by itself or by `accel stop`, in the matching state, with nothing left.
        const bool stop = m_random.bounded(2) == 1;
        QString expected = QStringLiteral("succeeded");
        if (stop) {
            const auto stopped = runAccel({QStringLiteral("stop"), runDir}, 60000);
            QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.out + stopped.err));
            expected = QStringLiteral("stopped");
        }
        QVERIFY2(waitFor([&] { return stateOf(runDir) == expected; }, 120000),
                 qPrintable(QStringLiteral("seed %1 cycle %2: state %3, expected %4")
                                .arg(m_seed)
                                .arg(cycle)
                                .arg(stateOf(runDir), expected)));
        QCOMPARE(stateInRunsList(root, runDir), expected);
        // Every process of the run names the cycle's folder: the detaching `accel launch`, the
        // supervisor, the ranks.
        QVERIFY2(waitFor([&] { return processesWithMarker(folder).isEmpty(); }, 10000),
                 qPrintable(QStringLiteral("seed %1 cycle %2: processes left: %3")
                                .arg(m_seed)
                                .arg(cycle)
                                .arg(processesWithMarker(folder).size())));
        QVERIFY2(waitFor([&] { return !runs(supervisor); }, 10000),
                 qPrintable(QStringLiteral("seed %1 cycle %2: the supervisor still runs").arg(m_seed).arg(cycle)));
        expectNoNetworkOrMemoryLeft(runDir);
        qInfo("cycle %d: studio killed %s its launch answered; the run went on and %s", cycle,
              answered ? "after" : "before", qPrintable(expected));
    }

    void expectNoNetworkOrMemoryLeft(const QString &runDir)
    {
        const int port = masterPortOf(runDir);
        QVERIFY2(port > 0, qPrintable(runDir));
        QVERIFY2(waitFor([&] { return !listensOn(port); }, 5000),
                 qPrintable(QStringLiteral("seed %1: something still listens on port %2").arg(m_seed).arg(port)));
        const QList<qint64> pids = everyRankPid(runDir);
        QVERIFY(!pids.isEmpty());
        QVERIFY2(
            segmentsOf(pids).isEmpty(),
            qPrintable(QStringLiteral("seed %1: shared memory left: %2").arg(m_seed).arg(segmentsOf(pids).join(u' '))));
    }

public:
    // Runs before the application object exists (Qt Test calls it from main). A long run
    // (ACCEL_CHAOS_CYCLES=50) outlasts Qt Test's 5 minutes per test function: allow 60 s per cycle
    // unless QTEST_FUNCTION_TIMEOUT is given; every wait inside a cycle has its own deadline.
    static void initMain()
    {
        if (qEnvironmentVariableIsEmpty("QTEST_FUNCTION_TIMEOUT"))
            qputenv("QTEST_FUNCTION_TIMEOUT", QByteArray::number(qint64(std::max(300, cycles() * 60)) * 1000));
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(program("fakechild")), "build the fakechild target");
        QVERIFY2(QFile::exists(program("accel")), "build the accel target");
        bool given = false;
        m_seed = qEnvironmentVariable("ACCEL_CHAOS_SEED").toUInt(&given);
        if (!given)
            m_seed = QRandomGenerator::global()->generate();
        m_random.seed(m_seed);
        qInfo("chaos seed %u (replay with ACCEL_CHAOS_SEED=%u), %d cycles per scenario", m_seed, m_seed, cycles());
    }

    // 1. kill -9 of a random rank: the run fails, its rank groups (grandchildren) are gone.
    void killRandomRank()
    {
        for (int cycle = 0; cycle < cycles(); ++cycle) {
            QTemporaryDir dir;
            const QString runDir = dir.filePath(QStringLiteral("run"));
            const QString marker = newMarker();
            const int pause = int(m_random.bounded(200));
            const bool detach = m_random.bounded(2) == 1;
            QProcess launch;
            launch.start(program("accel"), (detach ? QStringList{QStringLiteral("launch"), QStringLiteral("--detach")}
                                                   : QStringList{QStringLiteral("launch")}) +
                                               fakeRanks(runDir, marker, pause));
            QVERIFY(launch.waitForStarted());
            QVERIFY(waitFor([&] { return !rankPids(runDir, 2).isEmpty(); }, 15000));
            const QList<qint64> pids = rankPids(runDir, 2);
            const int victim = int(m_random.bounded(2));
            QThread::msleep(m_random.bounded(300));
            QVERIFY(::kill(static_cast<pid_t>(pids.at(victim)), SIGKILL) == 0);
            QVERIFY(launch.waitForFinished(20000));
            if (!detach)
                QCOMPARE(launch.exitCode(), 128 + SIGKILL);
            QVERIFY2(
                waitFor([&] { return stateOf(runDir) == QLatin1String("failed"); }, 15000),
                qPrintable(QStringLiteral("seed %1 cycle %2: state %3").arg(m_seed).arg(cycle).arg(stateOf(runDir))));
            QCOMPARE(manifestOf(runDir).value(QStringLiteral("failed_rank")).toInt(), victim);
            expectNothingLeft(runDir, marker, QStringLiteral("fakechild"));
        }
    }

    // 2. kill -9 of the supervisor alone: the reaper kills the rank groups; the run reads "lost".
    void killSupervisor()
    {
        for (int cycle = 0; cycle < cycles(); ++cycle)
            killSupervisorCycle(m_random.bounded(2) == 1, false);
    }

    // 3. kill -9 of the supervisor's whole process group (`kill -9 %1`).
    void killSupervisorGroup()
    {
        for (int cycle = 0; cycle < cycles(); ++cycle)
            killSupervisorCycle(false, true);
    }

    // 3b. kill -9 of every process of a run at once, reaper included (all stopped first, so none
    // cleans up after another): the ranks' segments stay behind, and the next `accel runs` removes
    // them. A segment of a live process and one of another user stay.
    void killEveryProcessAtOnceThenNextCommandSweeps()
    {
        QTemporaryDir dir;
        const QString root = dir.filePath(QStringLiteral("runs"));
        QVERIFY(QDir().mkpath(root));
        const QString runDir = root + QStringLiteral("/all-at-once");
        const QString marker = newMarker();
        const auto launched =
            runAccel(QStringList{QStringLiteral("launch"), QStringLiteral("--detach")} + fakeRanks(runDir, marker, 0));
        QVERIFY2(launched.exitCode == 0, qPrintable(launched.err));
        QVERIFY(waitFor([&] { return !rankPids(runDir, 2).isEmpty(); }, 15000));
        const QList<qint64> ranks = rankPids(runDir, 2);
        QVERIFY2(waitFor([&] { return segmentsOf(ranks).size() == 2; }, 10000), "the ranks made no segments");
        const QList<qint64> everyone = processesWithMarker(marker); // supervisor, reaper, ranks, grandchildren
        QVERIFY2(everyone.size() >= 4, qPrintable(QString::number(everyone.size())));
        for (const qint64 pid : everyone)
            ::kill(static_cast<pid_t>(pid), SIGSTOP);
        for (const qint64 pid : everyone)
            ::kill(static_cast<pid_t>(pid), SIGKILL);
        QVERIFY(waitFor(
            [&] { return std::none_of(everyone.begin(), everyone.end(), [](qint64 p) { return runs(p); }); }, 10000));
        QCOMPARE(segmentsOf(ranks).size(), 2); // nobody was left to remove them

        // Beside them: a segment named after this (live) process, and one of another user named
        // after a dead rank; neither may go.
        const QString mine = QStringLiteral("/accel-allreduce-%1-7").arg(::getpid());
        const QString theirs = QStringLiteral("/accel-allreduce-%1-8").arg(ranks.at(0));
        const bool asRoot = ::geteuid() == 0; // only root can make a segment of another user
        const auto cleanup = qScopeGuard([&] {
            for (const QString &name : {mine, theirs})
                ::shm_unlink(name.toLatin1().constData());
        });
        for (const QString &name : asRoot ? QStringList{mine, theirs} : QStringList{mine}) {
            const int fd = ::shm_open(name.toLatin1().constData(), O_CREAT | O_EXCL | O_RDWR, 0600);
            QVERIFY2(fd >= 0, qPrintable(name));
            if (name == theirs)
                QVERIFY(::fchown(fd, 65534, 65534) == 0);
            ::close(fd);
        }
        const auto listed =
            runAccel({QStringLiteral("runs"), QStringLiteral("--json"), QStringLiteral("--runs_root"), root});
        QCOMPARE(listed.exitCode, 0);
        QVERIFY2(segmentsOf(ranks) == (asRoot ? QStringList{theirs.mid(1)} : QStringList()),
                 qPrintable(segmentsOf(ranks).join(u' ')));
        QVERIFY2(listed.err.contains("removed 2 shared-memory segment(s)"), qPrintable(listed.err));
        QVERIFY(QFile::exists(QStringLiteral("/dev/shm") + mine));
    }

    // 4. kill -9 of a worker rank during training (possibly inside a checkpoint save); a new launch
    // with resume: auto starts from the last complete checkpoint and ends bit for bit like a run
    // that was never interrupted.
    void killWorkerThenResume()
    {
        if (!QFile::exists(program("accel-worker")))
            QSKIP("accel-worker is not built (no libtorch)");
        QTemporaryDir dir;
        const QString reference = dir.filePath(QStringLiteral("reference"));
        const Launched uninterrupted =
            launchJob(dir.path(), writeJob(dir.path(), reference), QStringLiteral("ref-run"));
        QCOMPARE(uninterrupted.exitCode, 0);
        const QByteArray expected = fileBytes(reference + QStringLiteral("/model.safetensors"));
        QVERIFY(!expected.isEmpty());
        const QStringList complete = {QStringLiteral("model.safetensors"),
                                      QStringLiteral("optimizer.bin"),
                                      QStringLiteral("scheduler.json"),
                                      QStringLiteral("dl_state_dict.json"),
                                      QStringLiteral("random_states_0.safetensors"),
                                      QStringLiteral("random_states_1.safetensors")};
        int killsDuringSave = 0;
        for (int cycle = 0; cycle < cycles(); ++cycle) {
            const QString output = dir.filePath(QStringLiteral("out-%1").arg(cycle));
            const QString job = writeJob(dir.path(), output);
            const QString runDir = dir.filePath(QStringLiteral("killed-%1").arg(cycle));
            QProcess launch;
            launch.start(program("accel"),
                         {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                          QStringLiteral("2"), QStringLiteral("--main_process_port"), QStringLiteral("0"),
                          QStringLiteral("--grace_period"), QStringLiteral("1"), QStringLiteral("--run_dir"), runDir,
                          QStringLiteral("--no_mirror"), QStringLiteral("--job"), job});
            QVERIFY(launch.waitForStarted());
            // Once the first checkpoint is being written, a random moment of the next 0.8 s.
            QVERIFY2(waitFor([&] { return QFileInfo::exists(output + QStringLiteral("/checkpoints")); }, 120000),
                     qPrintable(QStringLiteral("seed %1 cycle %2: no checkpoint after 120 s (state %3), rank 0:\n%4")
                                    .arg(m_seed)
                                    .arg(cycle)
                                    .arg(stateOf(runDir))
                                    .arg(QString::fromUtf8(
                                        fileBytes(runDir + QStringLiteral("/logs/rank0.log")).right(2000)))));
            QThread::msleep(m_random.bounded(800));
            const QList<qint64> pids = rankPids(runDir, 2);
            QCOMPARE(pids.size(), 2);
            QVERIFY(::kill(static_cast<pid_t>(pids.at(int(m_random.bounded(2)))), SIGKILL) == 0);
            QVERIFY(launch.waitForFinished(60000));
            QVERIFY2(launch.exitCode() != 0 && stateOf(runDir) == QLatin1String("failed"),
                     qPrintable(QStringLiteral("seed %1 cycle %2: the kill came too late (exit %3, state %4)")
                                    .arg(m_seed)
                                    .arg(cycle)
                                    .arg(launch.exitCode())
                                    .arg(stateOf(runDir))));
            QVERIFY(waitFor([&] { return processesWithMarker(job, QStringLiteral("accel-worker")).isEmpty(); }, 10000));
            expectNoNetworkOrMemoryLeft(runDir);
            // Every published checkpoint is complete; the newest is where the resume must start.
            int latest = -1;
            bool duringSave = false;
            for (const QString &name :
                 QDir(output + QStringLiteral("/checkpoints")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
                bool numbered = false;
                const int number = name.mid(QStringLiteral("checkpoint_").size()).toInt(&numbered);
                if (!name.startsWith(QStringLiteral("checkpoint_")) || !numbered) {
                    duringSave = duringSave || name.endsWith(QStringLiteral(".partial"));
                    continue; // checkpoint_<i>.partial: a save the kill interrupted
                }
                for (const QString &file : complete)
                    QVERIFY2(QFile::exists(output + QStringLiteral("/checkpoints/") + name + QLatin1Char('/') + file),
                             qPrintable(QStringLiteral("seed %1: %2 lacks %3").arg(m_seed).arg(name, file)));
                latest = std::max(latest, number);
            }
            const Launched resumed = launchJob(dir.path(), job, QStringLiteral("resumed-%1").arg(cycle));
            QCOMPARE(resumed.exitCode, 0);
            QCOMPARE(stateOf(resumed.runDir), QStringLiteral("succeeded"));
            const QByteArray log = fileBytes(resumed.runDir + QStringLiteral("/logs/rank0.log"));
            // scheduler.json's last_step counts scheduler steps: world size per optimizer step.
            const int resumeStep =
                latest < 0
                    ? 0
                    : QJsonDocument::fromJson(
                          fileBytes(output + QStringLiteral("/checkpoints/checkpoint_%1/scheduler.json").arg(latest)))
                              .object()
                              .value(QStringLiteral("last_step"))
                              .toInt() /
                          2;
            killsDuringSave += duringSave ? 1 : 0;
            qInfo("cycle %d: killed %s a checkpoint save with checkpoint_%d newest, resumed from step %d", cycle,
                  duringSave ? "during" : "outside", latest, resumeStep);
            if (latest >= 0)
                QVERIFY2(log.contains(QStringLiteral("resumed from step %1 (").arg(resumeStep).toUtf8()),
                         qPrintable(QStringLiteral("seed %1: expected a resume from checkpoint_%2:\n%3")
                                        .arg(m_seed)
                                        .arg(latest)
                                        .arg(QString::fromUtf8(log.right(2000)))));
            expectNoNetworkOrMemoryLeft(resumed.runDir);
            QVERIFY2(fileBytes(output + QStringLiteral("/model.safetensors")) == expected,
                     qPrintable(QStringLiteral("seed %1 cycle %2: resumed model differs from the uninterrupted run")
                                    .arg(m_seed)
                                    .arg(cycle)));
        }
        qInfo("%d of %d kills landed inside a checkpoint save (a checkpoint_<i>.partial was left)", killsDuringSave,
              cycles());
    }

    // 5. kill -9 of the studio at a random moment after its demo button launched a run: the run is
    // detached and goes on; it then ends by itself or by `accel stop` with nothing left.
    void killStudioDuringRun()
    {
        if (!QFile::exists(program("accel-worker")))
            QSKIP("accel-worker is not built (no libtorch)");
        if (!QFile::exists(program("studiolaunchchild")))
            QSKIP("studiolaunchchild is not built (no GUI in this build)");
        for (int cycle = 0; cycle < cycles(); ++cycle) {
            QTemporaryDir dir;
            killStudioCycle(cycle, dir.path());
            if (QTest::currentTestFailed())
                return;
        }
    }
};

QTEST_GUILESS_MAIN(tst_Chaos)
#include "tst_chaos.moc"
