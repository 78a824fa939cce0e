// Runs of people's own Python scripts in the studio, with the real programs: a 3-rank run (the
// real `accel launch`, the project's Python environment ACCEL_PYTHON with torch and accelerate)
// whose rank 2 raises shows rank 2's error on the failure card and the other ranks' "Connection
// closed by peer" as a consequence; its events read as words and whole numbers; a run whose
// supervisor is gone reads `lost` in the list and in its details. Skipped when accel is not built or
// ACCEL_PYTHON lacks torch and accelerate. ACCEL_TEST_SCREENSHOTS=<folder> also writes the
// pictures of docs/screenshots.
#include "app/studio/monitor/eventstimeline.h"
#include "app/studio/monitor/failuretriage.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/runstatuspanel.h"
#include "core/rundir/runlayout.h"
#include "monitor/eventsmodel.h"
#include "monitor/metricstore.h"
#include "monitor/runevent.h"
#include "monitor/runmonitor.h"
#include "monitor/runsmodel.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>


using namespace accel;

namespace {

// Rank --failing-rank raises; the others wait in a collective for it and end on their own error
// (they ignore the supervisor's SIGINT/SIGTERM, so that what they print is theirs).
const char *kFailScript = R"PY(import argparse
import signal

import torch
from accelerate import Accelerator

parser = argparse.ArgumentParser()
parser.add_argument("--failing-rank", type=int, default=2)
args = parser.parse_args()
accelerator = Accelerator(cpu=True)
if accelerator.process_index == args.failing_rank:
    raise ValueError(f"rank {accelerator.process_index}: the batch has 3 columns, the model expects 4")
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(accelerator.reduce(torch.ones(1), reduction="sum"))
)PY";

QString writeFile(const QString &path, const QByteArray &text)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size())
        qFatal("cannot write %s", qPrintable(path));
    return path;
}

QString accelProgram()
{
    return QDir(test::binDir()).filePath(QStringLiteral("accel"));
}

// The project's Python environment when it has torch and accelerate, else "" (the test skips).
QString trainingPython()
{
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty() || !QFileInfo(python).isExecutable())
        return {};
    const auto probe =
        test::runProgram(python, {QStringLiteral("-c"), QStringLiteral("import importlib.util as u, sys\n"
                                                                       "sys.exit(0 if u.find_spec('torch') and "
                                                                       "u.find_spec('accelerate') else 1)\n")});
    return probe.exitCode == 0 ? python : QString();
}

QString stateOf(monitor::RunsModel *model, const QString &id)
{
    const int row = model->rowOf(id);
    return row < 0 ? QString() : model->index(row, monitor::RunsModel::StateColumn).data().toString();
}

// ACCEL_TEST_SCREENSHOTS=<folder>: the window as it is, as <folder>/<name>.png.
void picture(QWidget *window, const QString &name)
{
    const QString folder = qEnvironmentVariable("ACCEL_TEST_SCREENSHOTS");
    if (folder.isEmpty())
        return;
    QDir().mkpath(folder);
    QTest::qWait(400); // the charts' coalesced redraw
    QVERIFY(window->grab().save(QDir(folder).filePath(name + QStringLiteral(".png"))));
}

} // namespace

class tst_ScriptLaunch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void detailsAgreeWithTheListOnALostRun();
    void failureCardNamesTheRankThatFailedFirst();
    void eventDetailsSayWhatApplies();

private:
    QTemporaryDir m_scratch;
    QString m_python;
};

void tst_ScriptLaunch::initTestCase()
{
    QVERIFY(m_scratch.isValid());
    // Runs, settings and caches stay inside the scratch folder.
    qputenv("XDG_DATA_HOME", m_scratch.filePath(QStringLiteral("data")).toLocal8Bit());
    qputenv("XDG_CONFIG_HOME", m_scratch.filePath(QStringLiteral("config")).toLocal8Bit());
    qputenv("XDG_CACHE_HOME", m_scratch.filePath(QStringLiteral("cache")).toLocal8Bit());
    QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_scriptlaunch"));
    QSettings().clear();
    m_python = trainingPython();
}

void tst_ScriptLaunch::detailsAgreeWithTheListOnALostRun()
{
    // Regression: a run whose supervisor is gone read `lost` in the list and `Running` in the
    // details. A run.json of a supervisor that was on this machine and has exited.
    const QString root = m_scratch.filePath(QStringLiteral("lost-runs"));
    const QString runDir = root + QStringLiteral("/20261129-000000-gone-0001");
    QVERIFY(QDir().mkpath(runDir + QStringLiteral("/logs")));
    QVERIFY(QDir().mkpath(runDir + QStringLiteral("/metrics")));
    rundir::SupervisorRecord record = rundir::currentSupervisorRecord();
    record.pid = 999999999; // no such process
    const QJsonObject supervisor =
        QJsonDocument::fromJson(QByteArray::fromStdString(rundir::supervisorRecordJson(record))).object();
    const QJsonObject manifest{{QStringLiteral("version"), 1},
                               {QStringLiteral("id"), QFileInfo(runDir).fileName()},
                               {QStringLiteral("name"), QStringLiteral("gone")},
                               {QStringLiteral("state"), QStringLiteral("running")},
                               {QStringLiteral("created"), 1795900000.0},
                               {QLatin1String(rundir::key::Supervisor), supervisor}};
    writeFile(runDir + QStringLiteral("/run.json"), QJsonDocument(manifest).toJson());

    app::RunsPage page;
    page.show();
    page.setRunsRoot(root);
    const QString id = QFileInfo(runDir).fileName();
    QTRY_COMPARE_WITH_TIMEOUT(stateOf(page.runsModel(), id), QStringLiteral("lost"), 10000);
    page.selectRuns({runDir});
    app::RunStatusPanel *details = page.monitorPage()->statusPanel();
    QTRY_COMPARE_WITH_TIMEOUT(details->state(), QStringLiteral("lost"), 10000);
    QCOMPARE(details->stateText(), QStringLiteral("Lost"));
}

void tst_ScriptLaunch::failureCardNamesTheRankThatFailedFirst()
{
    if (!QFileInfo(accelProgram()).isExecutable())
        QSKIP("accel is not built");
    if (m_python.isEmpty())
        QSKIP("ACCEL_PYTHON (the project's Python environment with torch and accelerate) is missing");
    const QString script = writeFile(m_scratch.filePath(QStringLiteral("fail/fail3.py")), kFailScript);
    const QString root = m_scratch.filePath(QStringLiteral("fail-runs"));
    const QString runDir = root + QStringLiteral("/20261129-000000-fail3-0003");
    const auto result = test::runAccel(
        {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"), QStringLiteral("3"),
         QStringLiteral("--main_process_port"), QStringLiteral("0"), QStringLiteral("--run_dir"), runDir,
         QStringLiteral("--quiet"), script, QStringLiteral("--failing-rank"), QStringLiteral("2")},
        120000, {}, {QStringLiteral("PYTHON_EXEC=") + m_python});
    QVERIFY2(result.exitCode != 0, qPrintable(result.err));
    QFile manifestFile(runDir + QStringLiteral("/run.json"));
    QVERIFY(manifestFile.open(QIODevice::ReadOnly));
    const QJsonObject manifest = QJsonDocument::fromJson(manifestFile.readAll()).object();
    QCOMPARE(manifest.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
    QCOMPARE(manifest.value(QStringLiteral("failed_rank")).toInt(-1), 2);
    // The precondition of the case: another rank printed its own, follow-on error.
    QFile rank0(runDir + QStringLiteral("/logs/rank0.log"));
    QVERIFY(rank0.open(QIODevice::ReadOnly));
    QVERIFY2(rank0.readAll().contains("Connection closed by peer"), "rank 0 did not report the lost peer");

    app::RunsPage page;
    page.resize(1280, 860);
    page.show();
    page.setRunsRoot(root);
    page.selectRuns({runDir});
    app::RunStatusPanel *details = page.monitorPage()->statusPanel();
    QTRY_VERIFY_WITH_TIMEOUT(details->isTriageShown(), 10000);
    QTRY_VERIFY_WITH_TIMEOUT(!details->triage().consequence.isEmpty(), 10000);
    const app::Triage card = details->triage();
    QVERIFY2(card.errorLine.startsWith(QStringLiteral("[rank 2] ")) &&
                 card.errorLine.contains(QStringLiteral("ValueError: rank 2: the batch has 3 columns")),
             qPrintable(card.errorLine));
    QCOMPARE(card.rank, 2);
    QVERIFY2(card.title.startsWith(QStringLiteral("Rank 2 failed first")), qPrintable(card.title));
    QVERIFY2(card.consequence.contains(QStringLiteral("Connection closed by peer")) &&
                 !card.consequence.startsWith(QStringLiteral("[rank 2]")),
             qPrintable(card.consequence));
    QVERIFY2(card.cause.contains(QStringLiteral("followed from it")), qPrintable(card.cause));

    // The run's events read as words and whole numbers (they showed "pid 1.719e+04").
    QAbstractItemModel *events = page.monitorPage()->eventsView()->model();
    QTRY_VERIFY_WITH_TIMEOUT(events->rowCount() >= 5, 10000);
    int exits = 0;
    for (int row = 0; row < events->rowCount(); ++row) {
        const QString details = events->index(row, monitor::EventsModel::DetailsColumn).data().toString();
        QVERIFY2(!details.contains(QStringLiteral("e+")) && !details.contains(QStringLiteral("{}")),
                 qPrintable(details));
        if (events->index(row, monitor::EventsModel::EventColumn).data().toString() == QLatin1String("rank_exited")) {
            ++exits;
            QVERIFY2(QRegularExpression(QStringLiteral("(^| )pid \\d{2,} ")).match(details).hasMatch() &&
                         details.contains(QStringLiteral("exit code 1")),
                     qPrintable(details));
        }
    }
    QCOMPARE(exits, 3);
    picture(&page, QStringLiteral("failure-card-3-ranks"));
}

void tst_ScriptLaunch::eventDetailsSayWhatApplies()
{
    // Regression: "exit code {}" for a rank killed by a signal (its exit code is null), and
    // "pid 1.719e+04".
    const QByteArray line = R"J({"v":1,"time":1795913852.9,"event":"rank_exited","rank":1,"pid":17190,)J"
                            R"J("exit_code":null,"signal":9,"result":"signal 9 (SIGKILL)","runtime_s":3.25,)J"
                            R"J("attempt":0})J";
    monitor::RunEvent killed;
    QVERIFY(monitor::parseEventLine(line, killed));
    const QString text = app::eventDetailsText(killed);
    QVERIFY2(text.contains(QStringLiteral("pid 17190")) && text.contains(QStringLiteral("signal 9")) &&
                 text.contains(QStringLiteral("runtime 3.25 s")) && !text.contains(QStringLiteral("exit code")),
             qPrintable(text));
    const QByteArray graceLine = R"J({"v":1,"time":1.0,"event":"killed","after_grace_ms":5000,"bytes":123456789})J";
    monitor::RunEvent grace;
    QVERIFY(monitor::parseEventLine(graceLine, grace));
    QCOMPARE(app::eventDetailsText(grace), QStringLiteral("after grace 5000 ms · bytes 123456789"));
}

QTEST_MAIN(tst_ScriptLaunch)
#include "tst_scriptlaunch.moc"
