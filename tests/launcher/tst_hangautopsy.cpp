// The hang autopsy end to end (docs/hang-autopsy.md): jobs that deadlock on purpose on
// 2 CPU ranks under the real `accel launch`; the supervisor's hang_suspected (minimum lowered with
// ACCEL_HANG_MINIMUM_S) runs `accel stack` by itself, and the capture kept in the run directory
// names the two different stacks. A Python script (gloo, rank 1 skips an all_reduce: py-spy from
// the project's Python environment) and a native accel-worker job (ACCEL_FAULT_EXTRA_BARRIER:
// rank 1 waits in a barrier the others never enter, seen through the worker's own handler with
// the collective and its sequence number). `accel stack RUN` on demand prints the same groups.
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QScopeGuard>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include <csignal>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace accel;

namespace {

// Rank 1 skips the fourth all_reduce and goes on to a barrier: rank 0 waits in all_reduce (line
// 13), rank 1 in barrier (line 14), for ever (gloo's default timeout is 30 minutes).
const char *kDeadlockScript = R"PY(import json, os, time
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
metrics = open(os.environ["ACCEL_METRICS_FILE"], "a")
t = torch.ones(4)
for step in range(1, 4):
    dist.all_reduce(t)
    metrics.write(json.dumps({"v": 1, "time": time.time(), "rank": rank, "step": step}) + "\n")
    metrics.flush()
if rank != 1:
    dist.all_reduce(t)
dist.barrier()
)PY";

void writeFile(const QString &path, const QByteArray &bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(bytes);
}

QJsonObject readJson(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

// Starts `accel launch` (attached: it is the supervisor) on `ranks` CPU ranks into runDir.
void startLaunch(QProcess &launch, const QString &runDir, const QStringList &program, const QStringList &extraEnv,
                 int ranks = 2)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("ACCEL_HANG_MINIMUM_S"), QStringLiteral("1"));
    env.insert(QStringLiteral("PYTHON_EXEC"), qEnvironmentVariable("ACCEL_PYTHON"));
    for (const QString &pair : extraEnv)
        env.insert(pair.section(QLatin1Char('='), 0, 0), pair.section(QLatin1Char('='), 1));
    launch.setProcessEnvironment(env);
    launch.setProcessChannelMode(QProcess::MergedChannels);
    launch.start(test::binDir() + QStringLiteral("/accel"),
                 QStringList{QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                             QString::number(ranks), QStringLiteral("--main_process_port"), QStringLiteral("0"),
                             QStringLiteral("--system_sample_hz"), QStringLiteral("0"), QStringLiteral("--run_dir"),
                             runDir} +
                     program);
    QVERIFY(launch.waitForStarted());
}

// The groups of the capture the supervisor kept after hang_suspected.
QJsonArray awaitAutopsy(QProcess &launch, const QString &runDir)
{
    const QString file = runDir + QStringLiteral("/stacks.json");
    QElapsedTimer timer;
    timer.start();
    while (!QFile::exists(file) && timer.elapsed() < 60000 && launch.state() == QProcess::Running)
        QTest::qWait(50);
    QFile events(runDir + QStringLiteral("/events.jsonl"));
    if (!QFile::exists(file)) {
        (void)events.open(QIODevice::ReadOnly);
        qWarning("%s\n%s", launch.readAll().constData(), events.readAll().constData());
        return {};
    }
    QTest::qWait(100); // the event line follows the file
    (void)events.open(QIODevice::ReadOnly);
    const QByteArray lines = events.readAll();
    [&] {
        QVERIFY2(lines.contains("\"event\":\"hang_suspected\""), lines.constData());
        QVERIFY2(lines.contains("\"event\":\"stacks_captured\""), lines.constData());
    }();
    const QJsonObject autopsy = readJson(file);
    [&] {
        QCOMPARE(autopsy.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.stack"));
        QCOMPARE(autopsy.value(QStringLiteral("version")).toInt(), 1);
        QCOMPARE(autopsy.value(QStringLiteral("reason")).toString(), QStringLiteral("hang_suspected"));
    }();
    return autopsy.value(QStringLiteral("groups")).toArray();
}

QJsonObject groupOf(const QJsonArray &groups, int rank)
{
    for (const QJsonValue &value : groups) {
        if (value.toObject().value(QStringLiteral("ranks")).toArray().contains(rank))
            return value.toObject();
    }
    return {};
}

void stopRun(QProcess &launch, const QString &runDir)
{
    const auto stopped =
        test::runAccel({QStringLiteral("stop"), runDir, QStringLiteral("--timeout"), QStringLiteral("5")});
    QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.err));
    QVERIFY(launch.waitForFinished(20000));
}

// Stops a run the test left hanging because a check failed first.
auto stopOnExit(QProcess &launch, const QString &runDir)
{
    return qScopeGuard([&launch, runDir] {
        if (launch.state() == QProcess::NotRunning)
            return;
        test::runAccel({QStringLiteral("stop"), runDir, QStringLiteral("--timeout"), QStringLiteral("5")});
        launch.waitForFinished(20000);
    });
}

} // namespace

class tst_HangAutopsy : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (!QFile::exists(qEnvironmentVariable("ACCEL_PYTHON")))
            QSKIP("the project's Python environment (ACCEL_PYTHON) is missing: run packaging/install-deps.sh");
    }

    void pythonDeadlockNamesBothStacks()
    {
        QTemporaryDir dir;
        const QString script = dir.filePath(QStringLiteral("hang.py"));
        writeFile(script, kDeadlockScript);
        const QString runDir = dir.filePath(QStringLiteral("run"));
        QProcess launch;
        startLaunch(launch, runDir, {script}, {});
        const auto cleanup = stopOnExit(launch, runDir);
        const QJsonArray groups = awaitAutopsy(launch, runDir);
        QCOMPARE(groups.size(), 2);
        const QJsonObject zero = groupOf(groups, 0), one = groupOf(groups, 1);
        QCOMPARE(zero.value(QStringLiteral("summary")).toString(), QStringLiteral("in all_reduce at hang.py:13"));
        QCOMPARE(one.value(QStringLiteral("summary")).toString(), QStringLiteral("in barrier at hang.py:14"));
        QCOMPARE(zero.value(QStringLiteral("kind")).toString(), QStringLiteral("python"));
        const QJsonObject userFrame = zero.value(QStringLiteral("frames")).toArray().last().toObject();
        QCOMPARE(userFrame.value(QStringLiteral("file")).toString(), script);
        QCOMPARE(userFrame.value(QStringLiteral("line")).toInt(), 13);

        // On demand: the same two groups, printed side by side.
        const auto onDemand = test::runAccel({QStringLiteral("stack"), runDir});
        QVERIFY2(onDemand.exitCode == 0, qPrintable(onDemand.err));
        QVERIFY2(onDemand.out.contains(QStringLiteral("rank 0 in all_reduce at hang.py:13\n")),
                 qPrintable(onDemand.out));
        QVERIFY2(onDemand.out.contains(QStringLiteral("rank 1 in barrier at hang.py:14\n")), qPrintable(onDemand.out));
        qInfo("%s", qPrintable(onDemand.out.section(QLatin1Char('\n'), 0, 2)));
        stopRun(launch, runDir);

        // An ended run has no stacks to take; the last capture is named.
        const auto ended = test::runAccel({QStringLiteral("stack"), runDir});
        QCOMPARE(ended.exitCode, 1);
        QVERIFY2(ended.err.contains(QStringLiteral("stacks.txt")), qPrintable(ended.err));
    }

    void nativeDeadlockNamesCollectiveAndSequence()
    {
        QTemporaryDir dir;
        QByteArray corpus;
        for (int i = 0; i < 200; ++i)
            corpus += "the quick brown fox jumps over the lazy dog. ";
        writeFile(dir.filePath(QStringLiteral("corpus.txt")), corpus);
        writeFile(
            dir.filePath(QStringLiteral("job.yaml")),
            QStringLiteral("recipe: gpt\noutput_dir: %1\nmodel: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 16}\n"
                           "data: {corpus: \"%2\"}\n"
                           "training: {max_steps: 1000, batch_size: 2, log_every: 1, eval_every: 0, "
                           "checkpoint_every: 0}\n")
                .arg(dir.filePath(QStringLiteral("out")), dir.filePath(QStringLiteral("corpus.txt")))
                .toUtf8());
        const QString runDir = dir.filePath(QStringLiteral("run"));
        QProcess launch;
        startLaunch(launch, runDir, {QStringLiteral("--job"), dir.filePath(QStringLiteral("job.yaml"))},
                    {QStringLiteral("ACCEL_FAULT_EXTRA_BARRIER=1:3")});
        const auto cleanup = stopOnExit(launch, runDir);
        const QJsonArray groups = awaitAutopsy(launch, runDir);
        QCOMPARE(groups.size(), 2);
        const QJsonObject zero = groupOf(groups, 0), one = groupOf(groups, 1);
        QCOMPARE(zero.value(QStringLiteral("kind")).toString(), QStringLiteral("native"));
        QCOMPARE(zero.value(QStringLiteral("collective")).toString(), QStringLiteral("all_reduce"));
        QCOMPARE(one.value(QStringLiteral("collective")).toString(), QStringLiteral("barrier"));
        QVERIFY(zero.value(QStringLiteral("waiting")).toBool());
        QVERIFY(one.value(QStringLiteral("waiting")).toBool());
        // Both ranks issued the same collectives until rank 1's extra barrier: the same number.
        QVERIFY(zero.value(QStringLiteral("sequence")).toInt() > 3);
        QCOMPARE(one.value(QStringLiteral("sequence")).toInt(), zero.value(QStringLiteral("sequence")).toInt());
        const QString frames = QString::fromUtf8(QJsonDocument(one.value(QStringLiteral("frames")).toArray()).toJson());
        QVERIFY2(frames.contains(QStringLiteral("accel::runtime::Accelerator::waitForEveryone")), qPrintable(frames));
        // Source lines from the objects' line tables where binutils' addr2line is installed: rank 1
        // waits in the deliberate barrier of the training loop.
        if (!QStandardPaths::findExecutable(QStringLiteral("addr2line")).isEmpty()) {
            const QJsonArray list = one.value(QStringLiteral("frames")).toArray();
            const bool found = std::any_of(list.begin(), list.end(), [](const QJsonValue &frame) {
                return frame.toObject()
                           .value(QStringLiteral("file"))
                           .toString()
                           .endsWith(QLatin1String("core/worker/trainingloop.cpp")) &&
                       frame.toObject().value(QStringLiteral("line")).toInt() > 0;
            });
            QVERIFY2(found, qPrintable(frames));
        }
        const auto onDemand = test::runAccel({QStringLiteral("stack"), runDir});
        QVERIFY2(onDemand.exitCode == 0, qPrintable(onDemand.err));
        qInfo("%s", qPrintable(onDemand.out.section(QLatin1Char('\n'), 0, 2)));
        stopRun(launch, runDir);
    }

    // Identical stacks share a line, their ranks as ranges: 4 plain Python ranks (no torch, so
    // cheap), rank 3 waiting on another line than the others.
    void identicalStacksAreGroupedByRankRanges()
    {
        QTemporaryDir dir;
        const QString script = dir.filePath(QStringLiteral("wait.py"));
        writeFile(script, "import os, time\n"
                          "if os.environ['RANK'] == '3':\n"
                          "    time.sleep(120)\n"
                          "else:\n"
                          "    time.sleep(120)\n");
        const QString runDir = dir.filePath(QStringLiteral("run"));
        QProcess launch;
        startLaunch(launch, runDir, {QStringLiteral("--no_python"), qEnvironmentVariable("ACCEL_PYTHON"), script}, {},
                    4);
        const auto cleanup = stopOnExit(launch, runDir);
        // Each rank is in its sleep once its interpreter has started: wait for all four.
        test::ProcessResult stacks;
        QElapsedTimer timer;
        timer.start();
        do {
            QTest::qWait(100);
            stacks = test::runAccel({QStringLiteral("stack"), runDir});
        } while (!stacks.out.contains(QStringLiteral("ranks 0-2 in <module> at wait.py:5")) && timer.elapsed() < 20000);
        QVERIFY2(stacks.out.contains(QStringLiteral("  ranks 0-2 in <module> at wait.py:5\n")), qPrintable(stacks.out));
        QVERIFY2(stacks.out.contains(QStringLiteral("  rank 3 in <module> at wait.py:3\n")), qPrintable(stacks.out));
        QVERIFY2(stacks.out.contains(QStringLiteral(": 2 group(s) of stacks (on demand)")), qPrintable(stacks.out));
        const auto json = test::runAccel({QStringLiteral("stack"), runDir, QStringLiteral("--json")});
        const QJsonObject document = QJsonDocument::fromJson(json.out.toUtf8()).object();
        QCOMPARE(document.value(QStringLiteral("ranks")).toArray().size(), 4);
        QCOMPARE(
            groupOf(document.value(QStringLiteral("groups")).toArray(), 1).value(QStringLiteral("ranks")).toArray(),
            (QJsonArray{0, 1, 2}));

        // A rank held by another tracer (as by a debugger): py-spy's refusal is said with the reason.
        // The tracer is a child of the test that seizes the rank and waits; killing it detaches the
        // rank again (a tracer that stays would hold the rank's stop signals).
        const QJsonObject rank3 = document.value(QStringLiteral("ranks")).toArray().at(3).toObject();
        const auto pid = static_cast<pid_t>(rank3.value(QStringLiteral("pid")).toDouble());
        QVERIFY(pid > 0);
        int ready[2];
        QCOMPARE(::pipe(ready), 0);
        const pid_t tracer = ::fork();
        if (tracer == 0) {
            const char seized = ::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) == 0 ? 1 : 0;
            (void)!::write(ready[1], &seized, 1);
            for (;;)
                ::pause();
        }
        ::close(ready[1]);
        char seized = 0;
        const ssize_t got = ::read(ready[0], &seized, 1);
        ::close(ready[0]);
        const auto traced = test::runAccel({QStringLiteral("stack"), runDir});
        ::kill(tracer, SIGKILL);
        ::waitpid(tracer, nullptr, 0);
        QVERIFY(got == 1 && seized == 1);
        QVERIFY2(
            traced.out.contains(
                QStringLiteral("rank 3 no stack: py-spy cannot attach: the process is traced by pid %1").arg(tracer)),
            qPrintable(traced.out));
        QVERIFY2(traced.out.contains(QStringLiteral("ranks 0-2 in <module> at wait.py:5")), qPrintable(traced.out));
        stopRun(launch, runDir);
    }

    void badInputIsRefused()
    {
        QTemporaryDir dir;
        auto result = test::runAccel({QStringLiteral("stack"), dir.filePath(QStringLiteral("nothing"))});
        QCOMPARE(result.exitCode, 2);
        result =
            test::runAccel({QStringLiteral("stack"), dir.path(), QStringLiteral("--timeout"), QStringLiteral("x")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("--timeout")), qPrintable(result.err));
    }
};

QTEST_GUILESS_MAIN(tst_HangAutopsy)
#include "tst_hangautopsy.moc"
