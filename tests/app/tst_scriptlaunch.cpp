// People's own Python scripts from the studio, end to end with the real programs: an argparse
// Accelerate script written here is launched from the Launch page's widgets through the real
// `accel` (build/bin) with the project's Python environment (ACCEL_PYTHON: torch, accelerate) as
// the interpreter; it gets its own arguments untouched, runs detached, is selected and followed on
// the Runs page at once, and goes on while the studio is closed and opened again (shown running in
// the list and the details, the Launch form as it was left). The interpreter is found (the
// project's .venv), checked, and a module it lacks is said before anything starts. A 3-rank run
// whose rank 2 raises shows rank 2's error on the failure card and the other ranks' "Connection
// closed by peer" as a consequence; its events read as words and whole numbers. Skipped when accel is not built or
// ACCEL_PYTHON lacks torch and accelerate. ACCEL_TEST_SCREENSHOTS=<folder> also writes the pictures of
// docs/screenshots.
#include "app/studio/launch/interpreterfield.h"
#include "app/studio/launch/launchpage.h"
#include "app/studio/launch/pythoninterpreters.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/eventstimeline.h"
#include "app/studio/monitor/failuretriage.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/runstatuspanel.h"
#include "core/rundir/runlayout.h"
#include "launcher/rundirectory.h"
#include "monitor/eventsmodel.h"
#include "monitor/metricstore.h"
#include "monitor/runevent.h"
#include "monitor/runmonitor.h"
#include "monitor/runsmodel.h"
#include "tests/helpers/testsupport.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace accel;
using accel::app::LaunchPage;
using accel::app::MainWindow;
using accel::app::Page;

namespace {

// A regression as people write them: argparse, Accelerate, the project's tracker for the charts.
// After each step of --hold-at N ... it waits for the file <--release-file>.N, so that the test
// can close and reopen the studio mid-run and see it go on.
const char *kTrainScript = R"PY(import argparse
import os
import time

import torch
from accelerate import Accelerator

from accel_studio_tracker import log

parser = argparse.ArgumentParser(description="a tiny regression")
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--tag", default="")
parser.add_argument("--hold-at", type=int, nargs="*", default=[])
parser.add_argument("--release-file", default="")
args = parser.parse_args()
print(f"args: steps={args.steps} lr={args.lr} tag={args.tag}", flush=True)
accelerator = Accelerator(cpu=True)
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
model, optimizer = accelerator.prepare(model, optimizer)
inputs, target = torch.eye(4), torch.tensor([[1.0], [2.0], [3.0], [4.0]])
for step in range(args.steps):
    loss = torch.nn.functional.mse_loss(model(inputs), target)
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
    log({"loss": loss.item(), "lr": args.lr}, step=step)
    print(f"step {step} loss {loss.item():.4f}", flush=True)
    time.sleep(0.02)
    if step in args.hold_at:
        deadline = time.time() + 120
        while not os.path.exists(f"{args.release_file}.{step}") and time.time() < deadline:
            time.sleep(0.1)
)PY";

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
    QTest::qWait(1200); // the charts' coalesced redraw and the status line's 1 s refresh
    QVERIFY(window->grab().save(QDir(folder).filePath(name + QStringLiteral(".png"))));
}

// Whatever happens, a detached run does not outlive the test.
struct StopAtExit {
    QString runDir;
    ~StopAtExit()
    {
        if (!runDir.isEmpty())
            test::runAccel({QStringLiteral("stop"), runDir}, 60000);
    }
};

QLineEdit *field(QWidget *page, const char *name)
{
    auto *edit = page->findChild<QLineEdit *>(QLatin1String(name));
    if (!edit)
        qFatal("no field %s", name);
    return edit;
}

void type(QLineEdit *edit, const QString &text)
{
    edit->selectAll();
    edit->del();
    QTest::keyClicks(edit, text);
}

} // namespace

class tst_ScriptLaunch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void scriptImportsAreTopLevelPackages();
    void interpreterIsFoundAndAMissingModuleStopsTheLaunch();
    void argparseScriptRunsDetachedAndSurvivesAStudioRestart();
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

void tst_ScriptLaunch::scriptImportsAreTopLevelPackages()
{
    const QString script = writeFile(m_scratch.filePath(QStringLiteral("imports/train.py")),
                                     "\"\"\"doc\"\"\"\nfrom __future__ import annotations\nimport os, sys as system\n"
                                     "import torch.nn.functional as F  # comment\nfrom accelerate.utils import "
                                     "set_seed\nfrom . import local\ntry:\n    import wandb\nexcept ImportError:\n"
                                     "    wandb = None\nimport os\n");
    QCOMPARE(app::scriptImports(script), (QStringList{QStringLiteral("os"), QStringLiteral("sys"),
                                                      QStringLiteral("torch"), QStringLiteral("accelerate")}));
    QVERIFY(app::scriptImports(m_scratch.filePath(QStringLiteral("imports/missing.py"))).isEmpty());
}

void tst_ScriptLaunch::interpreterIsFoundAndAMissingModuleStopsTheLaunch()
{
    if (m_python.isEmpty())
        QSKIP("ACCEL_PYTHON (the project's Python environment with torch and accelerate) is missing");
    // A project whose .venv is the project's Python environment; its script imports a module that
    // no environment has.
    const QString project = m_scratch.filePath(QStringLiteral("needs-project"));
    QVERIFY(QDir().mkpath(project));
    const QString venv = QFileInfo(QFileInfo(m_python).path()).path();
    QVERIFY(QFile::link(venv, project + QStringLiteral("/.venv")));
    const QString script = writeFile(project + QStringLiteral("/train.py"),
                                     "import argparse\nimport accelerate\nimport no_such_module_for_accel_tests\n");
    const QString config =
        writeFile(project + QStringLiteral("/cpu.yaml"),
                  "distributed_type: 'NO'\nmixed_precision: 'no'\nnum_processes: 1\nuse_cpu: true\n");
    const QString runsRoot = launcher::RunDirectory::defaultRunsRoot();
    const int runsBefore = QDir(runsRoot).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size();

    LaunchPage page;
    page.setAccelProgram(accelProgram());
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    type(field(&page, "script"), script);
    type(field(&page, "configFile"), config);
    app::InterpreterField *interpreter = page.interpreterField();

    // The interpreters found for this script: its project's .venv, with torch and accelerate.
    auto *choices = page.findChild<QToolButton *>(QStringLiteral("interpreterChoices"));
    QVERIFY(choices && choices->menu());
    QSignalSpy found(interpreter, &app::InterpreterField::found);
    interpreter->findInterpreters();
    QVERIFY(found.wait(60000));
    const QString projectPython = project + QStringLiteral("/.venv/bin/python");
    QAction *offered = nullptr;
    Q_EMIT choices->menu()->aboutToShow();
    for (QAction *action : choices->menu()->actions())
        if (action->data().toString() == projectPython)
            offered = action;
    QVERIFY2(offered,
             qPrintable(interpreter->foundInterpreters().isEmpty() ? QStringLiteral("none found")
                                                                   : interpreter->foundInterpreters().first().python));
    QVERIFY2(offered->text().contains(QStringLiteral("torch ")) &&
                 offered->text().contains(QStringLiteral("accelerate ")),
             qPrintable(offered->text()));
    offered->trigger();
    QCOMPARE(page.interpreter(), projectPython);
    QVERIFY(page.commandText().startsWith(QStringLiteral("PYTHON_EXEC=") + projectPython));

    // The live line names the missing module...
    QTRY_VERIFY_WITH_TIMEOUT(interpreter->checkText().contains(QStringLiteral("no_such_module_for_accel_tests")),
                             30000);
    // ... and Launch says it before anything starts: no run directory, no accel launch.
    QSignalSpy failed(&page, &LaunchPage::launchFailed);
    QSignalSpy launched(&page, &LaunchPage::launched);
    QTest::mouseClick(page.launchButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, 30000);
    const QString message = failed.first().first().toString();
    QVERIFY2(message.contains(QStringLiteral("'no_such_module_for_accel_tests'")) && message.contains(projectPython) &&
                 message.contains(QStringLiteral("train.py")),
             qPrintable(message));
    QVERIFY(launched.isEmpty());
    QCOMPARE(QDir(runsRoot).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), runsBefore);
    QVERIFY(page.launchButton()->isEnabled()); // not stuck

    // A script that is not there is said at once too.
    type(field(&page, "script"), project + QStringLiteral("/typo.py"));
    QVERIFY(!page.launch());
    QVERIFY(page.findChild<QLabel *>(QStringLiteral("launchState"))->text().contains(QStringLiteral("no such script")));
}

void tst_ScriptLaunch::argparseScriptRunsDetachedAndSurvivesAStudioRestart()
{
    if (!QFileInfo(accelProgram()).isExecutable())
        QSKIP("accel is not built");
    if (m_python.isEmpty())
        QSKIP("ACCEL_PYTHON (the project's Python environment with torch and accelerate) is missing");
    const QString project = m_scratch.filePath(QStringLiteral("my project"));
    const QString script = writeFile(project + QStringLiteral("/train.py"), kTrainScript);
    QVERIFY(QFile::copy(test::sourceDir() + QStringLiteral("/resources/python/accel_studio_tracker.py"),
                        project + QStringLiteral("/accel_studio_tracker.py")));
    const QString config =
        writeFile(project + QStringLiteral("/cpu.yaml"),
                  "distributed_type: 'NO'\nmixed_precision: 'no'\nnum_processes: 1\nuse_cpu: true\n");
    const QString release = m_scratch.filePath(QStringLiteral("release-the-run"));
    const QString arguments =
        QStringLiteral("--steps 12 --lr 0.05 --tag 'studio test' --hold-at 3 8 --release-file ") + release;

    auto window = std::make_unique<MainWindow>();
    window->resize(1280, 860);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    window->showPage(Page::Launch);
    LaunchPage *launch = window->launchPage();
    launch->setAccelProgram(accelProgram());
    // As a person does it: the fields typed in, Launch clicked.
    auto *kind = launch->findChild<QComboBox *>(QStringLiteral("programKind"));
    kind->setCurrentIndex(static_cast<int>(LaunchPage::ProgramKind::PythonScript));
    type(field(launch, "script"), script);
    type(field(launch, "arguments"), arguments);
    type(field(launch, "interpreter"), m_python);
    type(field(launch, "configFile"), config);
    QTRY_VERIFY_WITH_TIMEOUT(launch->launchButton()->isEnabled(), 5000);
    // Launch's own flags before the script, the script's arguments after it, untouched.
    QVERIFY2(launch->commandText().endsWith(QStringLiteral("train.py' ") + arguments),
             qPrintable(launch->commandText()));

    QSignalSpy launched(launch, &LaunchPage::launched);
    QSignalSpy failed(launch, &LaunchPage::launchFailed);
    QTest::mouseClick(launch->launchButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(launched.size() + failed.size() > 0, 60000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const QString id = launched.first().at(0).toString();
    const QString runDir = launched.first().at(1).toString();
    const StopAtExit stopAtExit{runDir};
    QVERIFY(runDir.startsWith(m_scratch.filePath(QStringLiteral("data"))));

    // The new run is selected and followed at once; Stop applies to it.
    QTRY_COMPARE_WITH_TIMEOUT(window->currentPage(), Page::Runs, 5000);
    app::RunsPage *runs = window->runsPage();
    QTRY_COMPARE_WITH_TIMEOUT(runs->selectedRuns(), QStringList{runDir}, 10000);
    app::MonitorPage *monitorPage = runs->monitorPage();
    QTRY_VERIFY_WITH_TIMEOUT(
        monitorPage->runMonitor(0) && monitorPage->runMonitor(0)->store()->rankStatus(0).lastStep >= 3, 60000);
    QVERIFY(std::isfinite(monitorPage->runMonitor(0)->store()->lastValue(0, QStringLiteral("loss"))));
    QCOMPARE(monitorPage->statusPanel()->state(), QStringLiteral("running"));
    QVERIFY(launch->stopButton()->isEnabled());
    // The script read its own arguments (argparse would have refused --detach or --json).
    QFile log(runDir + QStringLiteral("/logs/rank0.log"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString logText = QString::fromUtf8(log.readAll());
    QVERIFY2(logText.contains(QStringLiteral("args: steps=12 lr=0.05 tag=studio test")), qPrintable(logText));
    picture(window.get(), QStringLiteral("script-launch-live"));

    // Closing the studio leaves the run going.
    window->close();
    window.reset();
    auto run = launcher::RunDirectory::open(runDir, QFileInfo(runDir).path());
    QVERIFY(run);
    QCOMPARE(run->effectiveState(), QStringLiteral("running"));

    // Reopened: the Launch form as it was left; the run running in the list and in its details.
    auto reopened = std::make_unique<MainWindow>();
    reopened->resize(1280, 860);
    reopened->show();
    QVERIFY(QTest::qWaitForWindowExposed(reopened.get()));
    LaunchPage *launchAgain = reopened->launchPage();
    QCOMPARE(field(launchAgain, "script")->text(), script);
    QCOMPARE(field(launchAgain, "arguments")->text(), arguments);
    QCOMPARE(field(launchAgain, "interpreter")->text(), m_python);
    QCOMPARE(field(launchAgain, "configFile")->text(), config);
    monitor::RunsModel *model = reopened->runsPage()->runsModel();
    model->setRefreshInterval(250);
    reopened->showPage(Page::Runs);
    QTRY_VERIFY_WITH_TIMEOUT(model->rowOf(id) >= 0, 10000);
    QCOMPARE(stateOf(model, id), QStringLiteral("running"));
    reopened->runsPage()->selectRuns({runDir});
    app::RunStatusPanel *details = reopened->runsPage()->monitorPage()->statusPanel();
    QTRY_COMPARE_WITH_TIMEOUT(details->state(), QStringLiteral("running"), 10000);
    QCOMPARE(details->stateText(), QStringLiteral("Running"));
    app::MonitorPage *monitorAgain = reopened->runsPage()->monitorPage();
    QTRY_VERIFY_WITH_TIMEOUT(monitorAgain->runMonitor(0)->store()->rankStatus(0).lastStep >= 3, 20000);

    // ... and it goes on: on to step 8 (where it waits again), shown live, then to the end.
    writeFile(release + QStringLiteral(".3"), "go\n");
    QTRY_COMPARE_WITH_TIMEOUT(monitorAgain->runMonitor(0)->store()->rankStatus(0).lastStep, 8, 30000);
    QCOMPARE(details->state(), QStringLiteral("running"));
    QCOMPARE(stateOf(model, id), QStringLiteral("running"));
    picture(reopened.get(), QStringLiteral("script-launch-reopened"));
    writeFile(release + QStringLiteral(".8"), "go\n");
    QTRY_COMPARE_WITH_TIMEOUT(stateOf(model, id), QStringLiteral("succeeded"), 60000);
    QTRY_COMPARE_WITH_TIMEOUT(details->state(), QStringLiteral("succeeded"), 10000);
    QTRY_COMPARE_WITH_TIMEOUT(monitorAgain->runMonitor(0)->store()->rankStatus(0).lastStep, 11, 10000);
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
    QVERIFY2(card.errorLine.startsWith(QStringLiteral("[rank 2] ValueError: rank 2: the batch has 3 columns")),
             qPrintable(card.errorLine));
    QCOMPARE(card.rank, 2);
    QVERIFY2(card.title.startsWith(QStringLiteral("Rank 2 failed first")), qPrintable(card.title));
    QVERIFY2(card.consequence.contains(QStringLiteral("Connection closed by peer")) &&
                 !card.consequence.startsWith(QStringLiteral("[rank 2]")),
             qPrintable(card.consequence));
    QVERIFY2(card.cause.contains(QStringLiteral("because rank 2 did")) && card.cause.contains(card.consequence),
             qPrintable(card.cause));

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
    picture(&page, QStringLiteral("runs-failed-3-ranks"));
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
