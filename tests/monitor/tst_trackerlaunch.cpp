// A script's own trackers become the run's metrics with no change to the script (docs/trackers.md),
// end to end: unmodified Accelerate scripts with log_with="tensorboard" / "mlflow" on 2 CPU ranks,
// "trackio" on one, under the real `accel launch` (the project's Python environment), writing wherever
// their own arguments say. Every scalar they logged is in `accel tail --json` with its step, and
// the supervisor's hang detection fires for a script that logs only to TensorBoard. A folder named
// with --tracker_dir is read without discovery (--no_tracker_discovery); what it held from before
// the launch is not. The start-up hook runs the sitecustomize it hides.
#include "monitor/runevent.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

using namespace accel;

namespace {

// An Accelerate script as people write it: the tracker and its folder come from its arguments.
const char *kAccelerateScript = R"PY(
import argparse, time
from accelerate import Accelerator
parser = argparse.ArgumentParser()
parser.add_argument("--tracker", default="tensorboard")
parser.add_argument("--project_dir", default=None)
parser.add_argument("--hang", type=float, default=0)
args = parser.parse_args()
accelerator = Accelerator(log_with=args.tracker, project_dir=args.project_dir)
accelerator.init_trackers("my-project", config={"lr": 0.1, "optimizer": "adamw"})
for step in range(5):
    accelerator.log({"loss": 1.0 / (step + 1), "lr": 0.1 * 0.5 ** step, "note": "text is not a scalar",
                     "eval": {"acc": step / 4}}, step=step)
    time.sleep(0.05)
time.sleep(args.hang)  # no more progress: as if stuck in a collective
accelerator.end_training()
)PY";

QString python()
{
    return qEnvironmentVariable("ACCEL_PYTHON");
}

QString writeScript(const QTemporaryDir &dir, const QString &name, const char *text)
{
    const QString path = dir.filePath(name);
    QFile file(path);
    if (file.open(QIODevice::WriteOnly))
        file.write(text);
    return path;
}

// `accel launch` of a script on CPU ranks (2 unless told) into runDir, waited for.
test::ProcessResult launch(const QString &runDir, const QStringList &scriptAndArgs, const QStringList &extraEnv = {},
                           const QStringList &flags = {}, int ranks = 2)
{
    QStringList arguments{QStringLiteral("launch"),
                          QStringLiteral("--cpu"),
                          QStringLiteral("--num_processes"),
                          QString::number(ranks),
                          QStringLiteral("--main_process_port"),
                          QStringLiteral("0"),
                          QStringLiteral("--system_sample_hz"),
                          QStringLiteral("0"),
                          QStringLiteral("--run_dir"),
                          runDir};
    arguments << flags << scriptAndArgs;
    return test::runAccel(arguments, 120000, {}, QStringList{QStringLiteral("PYTHON_EXEC=") + python()} + extraEnv);
}

// The environment `accel launch --dry-run --json` plans for rank 0.
QJsonObject planEnvironment(const QStringList &arguments, const QStringList &extraEnv = {})
{
    const auto plan = test::runAccel(QStringList{QStringLiteral("launch"), QStringLiteral("--cpu"),
                                                 QStringLiteral("--dry-run"), QStringLiteral("--json")} +
                                         arguments,
                                     60000, {}, extraEnv);
    return QJsonDocument::fromJson(plan.out.toUtf8())
        .object()
        .value(QStringLiteral("ranks"))
        .toArray()
        .first()
        .toObject()
        .value(QStringLiteral("env"))
        .toObject();
}

// key -> step -> value, from `accel tail RUN --metrics --json --lines N`.
using Metrics = std::map<QString, std::map<qint64, double>>;
Metrics tailedMetrics(const QString &runDir)
{
    Metrics metrics;
    const auto tail = test::runAccel({QStringLiteral("tail"), runDir, QStringLiteral("--metrics"),
                                      QStringLiteral("--json"), QStringLiteral("--lines"), QStringLiteral("1000")});
    if (tail.exitCode != 0)
        return metrics;
    const QJsonObject snapshot = QJsonDocument::fromJson(tail.out.toUtf8()).object();
    for (const QJsonValue &entry : snapshot.value(QStringLiteral("lines")).toArray()) {
        const QJsonObject data = entry.toObject().value(QStringLiteral("data")).toObject();
        if (!data.contains(QStringLiteral("step")))
            continue;
        const qint64 step = qint64(data.value(QStringLiteral("step")).toDouble());
        for (auto it = data.begin(); it != data.end(); ++it) {
            if (it.key() != QLatin1String("v") && it.key() != QLatin1String("time") &&
                it.key() != QLatin1String("rank") && it.key() != QLatin1String("step"))
                metrics[it.key()][step] = it.value().isNull() ? std::nan("") : it.value().toDouble();
        }
    }
    return metrics;
}

QList<monitor::RunEvent> events(const QString &runDir)
{
    QList<monitor::RunEvent> events;
    QFile file(runDir + QStringLiteral("/events.jsonl"));
    if (!file.open(QIODevice::ReadOnly))
        return events;
    for (const QByteArray &line : file.readAll().split('\n')) {
        monitor::RunEvent event;
        if (!line.isEmpty() && monitor::parseEventLine(line, event))
            events.append(event);
    }
    return events;
}

int count(const QList<monitor::RunEvent> &list, const QString &name)
{
    return int(std::count_if(list.begin(), list.end(), [&](const monitor::RunEvent &e) { return e.event == name; }));
}

// What the script logged, as the tracker stored it (float32 for TensorBoard). `keys`: what the
// tracker keeps (Accelerate's MLflow tracker drops nested dicts).
void compareLogged(const Metrics &metrics, bool float32,
                   const QStringList &keys = {QStringLiteral("loss"), QStringLiteral("lr"), QStringLiteral("eval/acc")})
{
    for (const QString &name : keys) {
        const QByteArray key = name.toUtf8();
        QVERIFY2(metrics.count(name), key.constData());
        const auto &series = metrics.at(name);
        QCOMPARE(int(series.size()), 5);
        for (qint64 step = 0; step < 5; ++step) {
            const double want = key == "loss" ? 1.0 / double(step + 1)
                                : key == "lr" ? 0.1 * std::pow(0.5, double(step))
                                              : double(step) / 4.0;
            QVERIFY2(series.count(step), qPrintable(QStringLiteral("%1 at step %2").arg(name).arg(step)));
            if (float32) // written as the shortest text of the float32 value
                QCOMPARE(float(series.at(step)), float(want));
            else
                QCOMPARE(series.at(step), want);
        }
    }
    QVERIFY(!metrics.count(QStringLiteral("note"))); // text
}

} // namespace

class tst_TrackerLaunch : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (python().isEmpty() || !QFileInfo(python()).isExecutable())
            QSKIP("ACCEL_PYTHON (the project's Python environment) is not there: run packaging/install-deps.sh");
        QVERIFY(QFile::exists(test::binDir() + QStringLiteral("/accel")));
    }

    // log_with="tensorboard", its folder deep in a path only the script's arguments name; then the
    // script stops making progress: the supervisor suspects a hang from the TensorBoard steps alone.
    void tensorBoardScalarsAreTheRunsMetricsAndAHangIsSeen()
    {
        QTemporaryDir dir;
        const QString script = writeScript(dir, QStringLiteral("train.py"), kAccelerateScript);
        const QString projectDir = dir.filePath(QStringLiteral("somewhere/the/script/chose"));
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const auto result =
            launch(runDir,
                   {script, QStringLiteral("--project_dir"), projectDir, QStringLiteral("--hang"), QStringLiteral("3")},
                   {QStringLiteral("ACCEL_HANG_MINIMUM_S=1")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        compareLogged(tailedMetrics(runDir), true);

        const QList<monitor::RunEvent> list = events(runDir);
        QCOMPARE(count(list, QStringLiteral("hang_suspected")), 1);
        QStringList found;
        for (const monitor::RunEvent &event : list) {
            if (event.event == QLatin1String("tracker_found")) {
                QCOMPARE(event.fields.value(QStringLiteral("kind")).toString(), QStringLiteral("tensorboard"));
                QCOMPARE(event.rank, 0); // Accelerate's trackers run on the main process
                found << event.fields.value(QStringLiteral("path")).toString();
            }
        }
        // The writer's file, the hparams file of init_trackers' config, and the file of the dict's
        // one value (add_scalars).
        QCOMPARE(found.size(), 3);
        for (const QString &path : found)
            QVERIFY2(path.startsWith(projectDir + QStringLiteral("/my-project/")), qPrintable(path));
    }

    void mlflowFileStoreScalarsAreTheRunsMetrics()
    {
        QTemporaryDir dir;
        const QString script = writeScript(dir, QStringLiteral("train.py"), kAccelerateScript);
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const QString store = dir.filePath(QStringLiteral("elsewhere/mlruns"));
        const auto result = launch(
            runDir, {script, QStringLiteral("--tracker"), QStringLiteral("mlflow")},
            {QStringLiteral("MLFLOW_TRACKING_URI=file:") + store, QStringLiteral("MLFLOW_ALLOW_FILE_STORE=true")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        compareLogged(tailedMetrics(runDir), false, {QStringLiteral("loss"), QStringLiteral("lr")});
        const QList<monitor::RunEvent> list = events(runDir);
        QCOMPARE(count(list, QStringLiteral("tracker_found")), 1);
    }

    void trackioScalarsAreTheRunsMetrics()
    {
        QTemporaryDir dir;
        const QString script = writeScript(dir, QStringLiteral("train.py"), kAccelerateScript);
        const QString runDir = dir.filePath(QStringLiteral("run"));
        // An earlier run of the same project in the same database: not this run's.
        const QString trackioDir = dir.filePath(QStringLiteral("trackio"));
        const auto earlier =
            test::runProgram(python(),
                             {QStringLiteral("-c"),
                              QStringLiteral("import trackio\ntrackio.init(project='my-project')\n"
                                             "trackio.log({'loss': 99.0, 'old': 1.0}, step=0)\ntrackio.finish()\n")},
                             60000, {}, {QStringLiteral("TRACKIO_DIR=") + trackioDir});
        QVERIFY2(earlier.exitCode == 0, qPrintable(earlier.err));
        QTest::qWait(1100); // the earlier run's rows are stamped before the launch starts
        const auto result = launch(runDir, {script, QStringLiteral("--tracker"), QStringLiteral("trackio")},
                                   {QStringLiteral("TRACKIO_DIR=") + trackioDir}, {}, 1);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        const Metrics metrics = tailedMetrics(runDir);
        compareLogged(metrics, false);
        QVERIFY(!metrics.count(QStringLiteral("old")));
    }

    // --no_tracker_discovery: no start-up hook, no look at open files; --tracker_dir still read.
    void aNamedFolderIsReadWithoutDiscovery()
    {
        QTemporaryDir dir;
        const QString logs = dir.filePath(QStringLiteral("logs"));
        const char *writer = "import os, sys, tensorboardX\n" // rank 0 logs, as trackers do
                             "if os.environ.get('RANK', '0') == '0':\n"
                             "    w = tensorboardX.SummaryWriter(sys.argv[1])\n"
                             "    for step in range(3):\n"
                             "        w.add_scalar(sys.argv[2], float(step) / 2, step)\n"
                             "    w.close()\n";
        const QString script = writeScript(dir, QStringLiteral("write.py"), writer);
        // What the folder held before the launch is an earlier run's.
        const auto earlier =
            test::runProgram(python(), {script, logs + QStringLiteral("/old"), QStringLiteral("stale")});
        QVERIFY2(earlier.exitCode == 0, qPrintable(earlier.err));
        QTest::qWait(1100);

        const QString runDir = dir.filePath(QStringLiteral("run"));
        const QStringList flags{QStringLiteral("--no_tracker_discovery"), QStringLiteral("--tracker_dir"), logs};
        QVERIFY(!planEnvironment({QStringLiteral("--no_tracker_discovery"), script})
                     .contains(QStringLiteral("PYTHONPATH"))); // no hook on the path
        const auto result = launch(runDir, {script, logs + QStringLiteral("/new"), QStringLiteral("fresh")}, {}, flags);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY(!QFile::exists(runDir + QStringLiteral("/python/sitecustomize.py")));
        const Metrics metrics = tailedMetrics(runDir);
        QVERIFY(!metrics.count(QStringLiteral("stale")));
        QVERIFY(metrics.count(QStringLiteral("fresh")));
        QCOMPARE(int(metrics.at(QStringLiteral("fresh")).size()), 3);
        QCOMPARE(metrics.at(QStringLiteral("fresh")).at(2), 1.0);

        // With discovery (the default) the hook is on the ranks' PYTHONPATH, last.
        const QJsonObject env = planEnvironment({QStringLiteral("--run_dir"), runDir + QStringLiteral("2"), script},
                                                {QStringLiteral("PYTHONPATH=/mine")});
        QCOMPARE(env.value(QStringLiteral("PYTHONPATH")).toString(),
                 QStringLiteral("/mine:") + runDir + QStringLiteral("2/python"));
    }

    // The hook is the first sitecustomize on the path: it runs the one it hides (Debian's, a
    // site's), and still reports.
    void theHookRunsTheSitecustomizeItHides()
    {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("run/python")));
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("site")));
        QVERIFY(QFile::copy(test::sourceDir() + QStringLiteral("/resources/python/accel_tracker_hook.py"),
                            dir.filePath(QStringLiteral("run/python/sitecustomize.py"))));
        writeScript(dir, QStringLiteral("site/sitecustomize.py"), "open(__file__ + '.ran', 'w').write('yes')\n");
        const QString events = dir.filePath(QStringLiteral("tb/events.out.tfevents.1.host"));
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("tb")));
        const auto result = test::runProgram(
            python(),
            {QStringLiteral("-c"),
             QStringLiteral("open(%1, 'wb').close()").arg(QLatin1Char('\'') + events + QLatin1Char('\''))},
            30000, {},
            {QStringLiteral("PYTHONPATH=") + dir.filePath(QStringLiteral("run/python")) + QLatin1Char(':') +
                 dir.filePath(QStringLiteral("site")),
             QStringLiteral("RANK=3")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("site/sitecustomize.py.ran"))));
        QFile reports(dir.filePath(QStringLiteral("run/trackers.jsonl")));
        QVERIFY(reports.open(QIODevice::ReadOnly));
        const QJsonObject report = QJsonDocument::fromJson(reports.readLine()).object();
        QCOMPARE(report.value(QStringLiteral("kind")).toString(), QStringLiteral("tensorboard"));
        QCOMPARE(report.value(QStringLiteral("path")).toString(), events);
        QCOMPARE(report.value(QStringLiteral("rank")).toInt(), 3);
    }
};

QTEST_GUILESS_MAIN(tst_TrackerLaunch)
#include "tst_trackerlaunch.moc"
