// The Runs page on real run directories: runs created by the test (run.json written by the
// launcher's RunDirectory) are listed at start-up and when they appear, the model passes
// QAbstractItemModelTester, selections drive the Monitor view, and a REAL 2-rank job started
// with `accel launch --detach` shows rank rows and loss points live and is stopped with the
// page's Stop button (`accel stop` in a QProcess).
#include "app/studio/monitor/bannerbar.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/runstatuspanel.h"
#include "app/studio/monitor/stackdialog.h"
#include "launcher/rundirectory.h"
#include "tests/app/monitorpagesupport.h"
#include "tests/helpers/testsupport.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMenu>
#include <QMouseEvent>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

#include <algorithm>
#include <cstdlib>
#include <memory>

using namespace accel;
using accel::app::MonitorPage;
using accel::app::RunsPage;
using accel::test::monitorpage::makeRun;
using accel::test::monitorpage::writeScript;

namespace {

QString workerProgram()
{
    const QString fromEnv = qEnvironmentVariable("ACCEL_WORKER_PROGRAM");
    return fromEnv.isEmpty() ? QDir(test::binDir()).filePath(QStringLiteral("accel-worker")) : fromEnv;
}

int graphPoints(const app::MetricPlot *plot, int graph)
{
    return graph < plot->plot()->graphCount() ? plot->plot()->graph(graph)->data()->size() : 0;
}

QAction *runMenuAction(QMenu *menu, const QString &text)
{
    const auto actions = menu->actions();
    auto it = std::find_if(actions.begin(), actions.end(), [&](QAction *action) { return action->text() == text; });
    return it == actions.end() ? nullptr : *it;
}

} // namespace

class tst_RunsPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The Monitor keeps its x axis, smoothing and panel layouts in the settings: each case starts clean.
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_runspage"));
    }
    void init() { QSettings().clear(); }
    void listsRunsOnDiskAndSelectsTheNewest();
    void newRunsAppearAndSeveralCanBeSelected();
    void stopIsOnlyForLiveRuns();
    void realJobIsFollowedAndStopped();
    void runListCollapses();
    void compareWithOverlaysRunsAndTheCrosshairReadsEach();
    void stoppedPythonRunShowsAsStopped();
    void pythonRunMissingAModuleShowsTheTriageCard();
};

void tst_RunsPage::listsRunsOnDiskAndSelectsTheNewest()
{
    QTemporaryDir root;
    const double now = QDateTime::currentSecsSinceEpoch();
    const QString older =
        makeRun(root.path(), QStringLiteral("20261122-010000-older-aaaa"), now - 600, QStringLiteral("succeeded"));
    const QString newer =
        makeRun(root.path(), QStringLiteral("20261122-011000-newer-bbbb"), now - 60, QStringLiteral("failed"));
    QVERIFY(!older.isEmpty() && !newer.isEmpty());
    QVERIFY(QDir().mkpath(root.filePath(QStringLiteral("not-a-run")))); // no run.json: not listed

    RunsPage page;
    QAbstractItemModelTester tester(page.runsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    page.setRunsRoot(root.path());
    QCOMPARE(page.runsModel()->rowCount(), 2);
    auto *view = page.runsView();
    QCOMPARE(view->model()->index(0, monitor::RunsModel::IdColumn).data().toString(), QFileInfo(newer).fileName());
    QCOMPARE(view->model()->index(0, monitor::RunsModel::StateColumn).data().toString(), QStringLiteral("failed"));
    QVERIFY(view->model()
                ->index(0, monitor::RunsModel::ConfigColumn)
                .data()
                .toString()
                .contains(QStringLiteral("MULTI_CPU")));
    // The newest run is selected at start-up and shown in the Monitor view.
    QCOMPARE(page.selectedRuns(), QStringList{newer});
    QCOMPARE(page.monitorPage()->runs(), QStringList{newer});
}

void tst_RunsPage::newRunsAppearAndSeveralCanBeSelected()
{
    QTemporaryDir root;
    const double now = QDateTime::currentSecsSinceEpoch();
    const QString first =
        makeRun(root.path(), QStringLiteral("20261122-010000-first-aaaa"), now - 100, QStringLiteral("succeeded"));
    RunsPage page;
    page.runsModel()->setRefreshInterval(200);
    QAbstractItemModelTester tester(page.runsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    page.setRunsRoot(root.path());
    QCOMPARE(page.runsModel()->rowCount(), 1);
    const QString second =
        makeRun(root.path(), QStringLiteral("20261122-010500-second-bbbb"), now - 10, QStringLiteral("stopped"));
    QTRY_COMPARE_WITH_TIMEOUT(page.runsModel()->rowCount(), 2, 5000);
    QFile metrics(second + QStringLiteral("/metrics/rank0.jsonl"));
    QVERIFY(metrics.open(QIODevice::WriteOnly));
    metrics.write(QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":0,\"step\":1,\"loss\":2.5}\n").arg(now).toUtf8());
    metrics.close();

    page.selectRuns({first, second});
    QCOMPARE(page.selectedRuns().size(), 2);
    QCOMPARE(page.monitorPage()->runs().size(), 2);
    auto *loss = page.monitorPage()->chart(MonitorPage::LossChart);
    QCOMPARE(loss->storeCount(), 2);
    QTRY_COMPARE_WITH_TIMEOUT(graphPoints(loss, 0), 1, 5000);

    // A run folder removed from disk leaves the list.
    QVERIFY(QDir(first).removeRecursively());
    QTRY_COMPARE_WITH_TIMEOUT(page.runsModel()->rowCount(), 1, 5000);
}

void tst_RunsPage::stopIsOnlyForLiveRuns()
{
    QTemporaryDir root;
    const QString done = makeRun(root.path(), QStringLiteral("20261122-010000-done-aaaa"),
                                 QDateTime::currentSecsSinceEpoch(), QStringLiteral("succeeded"));
    RunsPage page;
    page.setRunsRoot(root.path());
    QCOMPARE(page.selectedRuns(), QStringList{done});
    QVERIFY(!page.stopButton()->isEnabled());
    QVERIFY(!page.stopSelected());
    QVERIFY(!page.isStopping());
    // An ended run has no stacks to capture.
    std::unique_ptr<QMenu> menu(page.createRunMenu(nullptr));
    QAction *stacks = runMenuAction(menu.get(), QStringLiteral("Capture stacks"));
    QVERIFY(stacks && !stacks->isEnabled());
    QVERIFY(!page.stacksButton()->isEnabled());
}

void tst_RunsPage::realJobIsFollowedAndStopped()
{
    const QString accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    if (!QFileInfo(accel).isExecutable())
        QSKIP(qPrintable(QStringLiteral("%1 is not built").arg(accel)));
    const QString worker = workerProgram();
    if (!QFileInfo(worker).isExecutable())
        QSKIP(qPrintable(QStringLiteral("accel-worker is not built (%1); the real job needs libtorch").arg(worker)));

    QTemporaryDir scratch;
    const QString root = scratch.filePath(QStringLiteral("runs"));
    QVERIFY(QDir().mkpath(root));
    // The demo recipe, long enough to still be running when the test stops it.
    const QString job = scratch.filePath(QStringLiteral("job.yaml"));
    QFile jobFile(job);
    QVERIFY(jobFile.open(QIODevice::WriteOnly));
    jobFile.write(
        QStringLiteral("recipe: gpt\nname: studio-test\nseed: 1\n"
                       "model:\n  n_layer: 1\n  n_head: 2\n  n_embd: 32\n  block_size: 32\n  dropout: 0.0\n"
                       "data:\n  corpus: %1\n  eval_fraction: 0.05\n"
                       "training:\n  max_steps: 100000\n  batch_size: 4\n  learning_rate: 2.0e-3\n  warmup_steps: 5\n"
                       "  log_every: 2\n  eval_every: 0\n  checkpoint_every: 0\n  resume: none\n")
            .arg(QDir(test::sourceDir()).filePath(QStringLiteral("resources/corpus/corpus.txt")))
            .toUtf8());
    jobFile.close();

    RunsPage page;
    page.setAccelProgram(accel);
    page.runsModel()->setRefreshInterval(250);
    page.resize(1200, 900);
    page.show();
    page.setRunsRoot(root);
    QCOMPARE(page.runsModel()->rowCount(), 0);

    const QString runDir = root + QStringLiteral("/20261122-000000-studio-test-0001");
    const auto launched = test::runAccel(
        {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"), QStringLiteral("2"),
         QStringLiteral("--num_cpu_threads_per_process"), QStringLiteral("1"), QStringLiteral("--main_process_port"),
         QStringLiteral("0"), QStringLiteral("--no_mirror"), QStringLiteral("--detach"), QStringLiteral("--json"),
         QStringLiteral("--run_dir"), runDir, QStringLiteral("--job"), job},
        60000, {}, {QStringLiteral("ACCEL_WORKER_PROGRAM=%1").arg(worker)});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.err + launched.out));

    // The run shows up (the page selects it, as the newest), with its two ranks and loss points.
    QTRY_COMPARE_WITH_TIMEOUT(page.runsModel()->rowCount(), 1, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(page.selectedRuns(), QStringList{runDir}, 5000);
    auto *monitorPage = page.monitorPage();
    QTRY_COMPARE_WITH_TIMEOUT(monitorPage->ranksView()->model()->rowCount(), 2, 60000);
    auto *loss = monitorPage->chart(MonitorPage::LossChart);
    QTRY_VERIFY_WITH_TIMEOUT(graphPoints(loss, 0) >= 2 && graphPoints(loss, 1) >= 2, 60000);
    QVERIFY(std::isfinite(loss->plot()->graph(0)->data()->at(0)->value));
    QTRY_VERIFY_WITH_TIMEOUT(
        monitorPage->ranksView()->model()->index(0, 1).data().toString().contains(QStringLiteral("running")), 10000);

    // The hang autopsy from the run's menu and its Stacks button: `accel stack` of the live run,
    // shown in a window with both native ranks (the worker's own handler answers).
    {
        std::unique_ptr<QMenu> menu(page.createRunMenu(nullptr));
        QAction *stacks = runMenuAction(menu.get(), QStringLiteral("Capture stacks"));
        QVERIFY(stacks && stacks->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(page.stacksButton()->isEnabled(), 10000);
        page.stacksButton()->click();
        app::StackDialog *dialog = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((dialog = page.findChild<app::StackDialog *>()) &&
                                     dialog->reportText().contains(QStringLiteral("group(s) of stacks")),
                                 30000);
        QVERIFY2(dialog->reportText().contains(QStringLiteral("(native, innermost first)")),
                 qPrintable(dialog->reportText()));
        QVERIFY(QFile::exists(runDir + QStringLiteral("/stacks.json")));
        delete dialog;
        stacks->trigger(); // the menu's action opens the same window
        QTRY_VERIFY_WITH_TIMEOUT(page.findChild<app::StackDialog *>() != nullptr, 5000);
        delete page.findChild<app::StackDialog *>();
    }

    // Stop through the page: `accel stop` runs in a QProcess while the event loop keeps going.
    QTRY_VERIFY_WITH_TIMEOUT(page.stopButton()->isEnabled(), 10000);
    QSignalSpy finished(&page, &RunsPage::stopFinished);
    page.stopButton()->click();
    QVERIFY(page.isStopping());
    QVERIFY(!page.stopButton()->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 60000);
    QCOMPARE(finished.at(0).at(0).toString(), runDir);
    QVERIFY2(finished.at(0).at(1).toInt() == 0, qPrintable(finished.at(0).at(2).toString()));
    const int row = page.runsModel()->rowOf(QFileInfo(runDir).fileName());
    QTRY_COMPARE_WITH_TIMEOUT(page.runsModel()->index(row, monitor::RunsModel::StateColumn).data().toString(),
                              QStringLiteral("stopped"), 10000);
}

void tst_RunsPage::runListCollapses()
{
    QTemporaryDir root;
    makeRun(root.path(), QStringLiteral("20261122-010000-one-aaaa"), QDateTime::currentSecsSinceEpoch(),
            QStringLiteral("succeeded"));
    RunsPage page;
    page.resize(1024, 700);
    page.show();
    page.setRunsRoot(root.path());
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    // The run list starts small: the Monitor gets most of the page.
    QVERIFY2(page.runsView()->height() < page.monitorPage()->height() / 2,
             qPrintable(QStringLiteral("%1 vs %2").arg(page.runsView()->height()).arg(page.monitorPage()->height())));
    const int before = page.monitorPage()->height();
    auto *toggle = page.findChild<QPushButton *>(QStringLiteral("runListToggle"));
    QVERIFY(toggle);
    toggle->click();
    QVERIFY(!page.isRunListVisible());
    QTRY_VERIFY(page.monitorPage()->height() > before);
    QCOMPARE(page.selectedRuns().size(), 1); // hiding the list keeps the selection
    toggle->click();
    QVERIFY(page.isRunListVisible());
}

namespace {

// Two ranks' losses at steps 0..10: `base` + rank + step / 2 (exact in binary, so readouts compare as text).
bool writeLosses(const QString &run, double base)
{
    const double now = QDateTime::currentMSecsSinceEpoch() / 1000.0;
    for (int rank = 0; rank < 2; ++rank) {
        QFile file(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank));
        if (!file.open(QIODevice::WriteOnly))
            return false;
        for (int step = 0; step <= 10; ++step)
            file.write(QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":%2,\"step\":%3,\"loss\":%4}\n")
                           .arg(now + step, 0, 'f', 3)
                           .arg(rank)
                           .arg(step)
                           .arg(base + rank + step / 2.0)
                           .toUtf8());
    }
    return true;
}

const QCPGraph *graphNamed(const app::MetricPlot *chart, const QString &name)
{
    for (int i = 0; i < chart->plot()->graphCount(); ++i) {
        if (chart->plot()->graph(i)->name() == name)
            return chart->plot()->graph(i);
    }
    return nullptr;
}

} // namespace

void tst_RunsPage::compareWithOverlaysRunsAndTheCrosshairReadsEach()
{
    QTemporaryDir root;
    const double now = QDateTime::currentSecsSinceEpoch();
    const QString alpha =
        makeRun(root.path(), QStringLiteral("20261122-010000-alpha-aaaa"), now - 600, QStringLiteral("succeeded"));
    const QString beta =
        makeRun(root.path(), QStringLiteral("20261122-011000-beta-bbbb"), now - 60, QStringLiteral("succeeded"));
    QVERIFY(!alpha.isEmpty() && !beta.isEmpty());
    QVERIFY(writeLosses(alpha, 1.0) && writeLosses(beta, 10.0));
    RunsPage page;
    page.resize(1400, 900);
    page.show();
    page.setRunsRoot(root.path());
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.monitorPage()->setSmoothing(0);              // raw curves only
    QCOMPARE(page.selectedRuns(), QStringList{beta}); // the newest
    // With the list hidden, "Compare with…" still offers the other run, named by name and id.
    page.setRunListVisible(false);
    QCOMPARE(page.compareCandidates(), QStringList{alpha});
    QMenu *menu = page.compareButton()->menu();
    Q_EMIT menu->aboutToShow();
    QCOMPARE(menu->actions().size(), 1);
    QCOMPARE(menu->actions().first()->text(), QStringLiteral("alpha (20261122-010000-alpha-aaaa)"));
    menu->actions().first()->trigger();
    QCOMPARE(page.selectedRuns(), (QStringList{beta, alpha}));
    QCOMPARE(page.monitorPage()->runs(), (QStringList{beta, alpha}));
    QVERIFY(page.compareCandidates().isEmpty());

    // Both runs' ranks are plotted, named by run (its name) and rank in the legend, each run in its own hue.
    auto *loss = page.monitorPage()->chart(MonitorPage::LossChart);
    const QString a = QStringLiteral("alpha");
    const QString b = QStringLiteral("beta");
    const QStringList curves = {b + QStringLiteral(" rank 0"), b + QStringLiteral(" rank 1"),
                                a + QStringLiteral(" rank 0"), a + QStringLiteral(" rank 1")};
    QTRY_VERIFY_WITH_TIMEOUT(graphNamed(loss, curves.last()) && graphNamed(loss, curves.last())->data()->size() == 11,
                             5000);
    loss->replotNow();
    for (const QString &name : curves) {
        const QCPGraph *graph = graphNamed(loss, name);
        QVERIFY2(graph && graph->data()->size() == 11, qPrintable(name));
        QVERIFY2(loss->plot()->legend->hasItemWithPlottable(graph), qPrintable(name));
    }
    auto hue = [&](int curve) { return graphNamed(loss, curves[curve])->pen().color().hsvHue(); };
    auto apart = [&](int a, int b) { // degrees around the colour wheel
        const int d = std::abs(hue(a) - hue(b));
        return std::min(d, 360 - d);
    };
    QVERIFY2(apart(0, 1) <= 2 && apart(2, 3) <= 2,
             qPrintable(QStringLiteral("%1 %2 %3 %4").arg(hue(0)).arg(hue(1)).arg(hue(2)).arg(hue(3))));
    QVERIFY2(apart(0, 2) > 30, qPrintable(QStringLiteral("%1 vs %2").arg(hue(0)).arg(hue(2))));
    QVERIFY(graphNamed(loss, curves[0])->pen().color() != graphNamed(loss, curves[1])->pen().color());

    // The pointer over step 4 reads every run's every rank there.
    const QPoint at(int(loss->plot()->xAxis->coordToPixel(4)), loss->plot()->axisRect()->center().y());
    QMouseEvent move(QEvent::MouseMove, QPointF(at), QPointF(loss->plot()->mapToGlobal(at)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QCoreApplication::sendEvent(loss->plot(), &move);
    const QStringList expected = {b + QStringLiteral(" rank 0: 12 (step 4)"),
                                  b + QStringLiteral(" rank 1: 13 (step 4)"), a + QStringLiteral(" rank 0: 3 (step 4)"),
                                  a + QStringLiteral(" rank 1: 4 (step 4)")};
    QCOMPARE(loss->crosshairText(), QStringLiteral("Loss\n") + expected.join(QLatin1Char('\n')));
}

namespace {

// `accel launch` of a Python script on 2 CPU ranks into `runDir`; detached or waited for.
test::ProcessResult launchPython(const QString &runDir, const QString &script, bool detach)
{
    QStringList arguments = {QStringLiteral("launch"),
                             QStringLiteral("--cpu"),
                             QStringLiteral("--num_processes"),
                             QStringLiteral("2"),
                             QStringLiteral("--main_process_port"),
                             QStringLiteral("0"),
                             QStringLiteral("--no_mirror"),
                             QStringLiteral("--run_dir"),
                             runDir};
    if (detach)
        arguments << QStringLiteral("--detach");
    arguments << script;
    return test::runAccel(arguments, 60000);
}

struct StopAtExit {
    QString runDir;
    ~StopAtExit() { test::runAccel({QStringLiteral("stop"), runDir}, 60000); }
};

} // namespace

void tst_RunsPage::stoppedPythonRunShowsAsStopped()
{
    // Regression: pressing Stop showed red "failed: SIGTERM" banners for a run that was stopped.
    if (!QFileInfo(QDir(test::binDir()).filePath(QStringLiteral("accel"))).isExecutable())
        QSKIP("accel is not built");
    QTemporaryDir scratch;
    const QString root = scratch.filePath(QStringLiteral("runs"));
    QVERIFY(QDir().mkpath(root));
    const QString script =
        writeScript(scratch.path(), QStringLiteral("loop.py"),
                    "import time\nprint('looping', flush=True)\nwhile True:\n    time.sleep(0.05)\n");
    RunsPage page;
    page.setAccelProgram(QDir(test::binDir()).filePath(QStringLiteral("accel")));
    page.runsModel()->setRefreshInterval(250);
    page.show();
    page.setRunsRoot(root);
    const QString runDir = root + QStringLiteral("/20261122-000000-loop-0001");
    const auto launched = launchPython(runDir, script, true);
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.err + launched.out));
    // Whatever happens below, the detached run does not outlive the test.
    const StopAtExit stopAtExit{runDir};
    QTRY_COMPARE_WITH_TIMEOUT(page.selectedRuns(), QStringList{runDir}, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(page.stopButton()->isEnabled(), 10000);
    auto *status = page.monitorPage()->statusPanel();
    QTRY_COMPARE_WITH_TIMEOUT(status->state(), QStringLiteral("running"), 10000);
    QSignalSpy finished(&page, &RunsPage::stopFinished);
    page.stopButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 60000);
    QVERIFY2(finished.at(0).at(1).toInt() == 0, qPrintable(finished.at(0).at(2).toString()));
    QTRY_COMPARE_WITH_TIMEOUT(status->state(), QStringLiteral("stopped"), 10000);
    QVERIFY(status->stateText().startsWith(QStringLiteral("Stopped")));
    QVERIFY(!status->isTriageShown());
    QTRY_VERIFY_WITH_TIMEOUT(!page.monitorPage()->banners()->messages().isEmpty(), 5000);
    for (const QString &message : page.monitorPage()->banners()->messages())
        QVERIFY2(!message.contains(QStringLiteral("fail")), qPrintable(message));
    QVERIFY(!page.stopButton()->isEnabled()); // nothing left to stop
}

void tst_RunsPage::pythonRunMissingAModuleShowsTheTriageCard()
{
    if (!QFileInfo(QDir(test::binDir()).filePath(QStringLiteral("accel"))).isExecutable())
        QSKIP("accel is not built");
    QTemporaryDir scratch;
    const QString root = scratch.filePath(QStringLiteral("runs"));
    QVERIFY(QDir().mkpath(root));
    const QString script = writeScript(scratch.path(), QStringLiteral("needs.py"),
                                       "print('about to import', flush=True)\n"
                                       "import nosuchmodule_for_accel_tests\n");
    const QString runDir = root + QStringLiteral("/20261122-000000-needs-0001");
    const auto launched = launchPython(runDir, script, false);
    QVERIFY2(launched.exitCode != 0, qPrintable(launched.out));
    RunsPage page;
    page.show();
    page.setRunsRoot(root);
    QCOMPARE(page.selectedRuns(), QStringList{runDir});
    auto *status = page.monitorPage()->statusPanel();
    QTRY_VERIFY_WITH_TIMEOUT(status->isTriageShown(), 10000);
    QTRY_VERIFY_WITH_TIMEOUT(status->triage().errorLine.contains(
                                 QStringLiteral("ModuleNotFoundError: No module named 'nosuchmodule_for_accel_tests'")),
                             10000);
    QVERIFY2(status->triage().title.contains(QStringLiteral("Missing Python module")),
             qPrintable(status->triage().title));
}

QTEST_MAIN(tst_RunsPage)
#include "tst_runspage.moc"
