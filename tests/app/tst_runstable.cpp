// The Runs page as a runs table and a place to manage runs: hyperparameter columns (those that
// differ shown), the filter, numeric sort, the diff of the selected runs, and rename, notes, tags,
// open folder, export and delete (confirmed) from the page. End to end through the real `accel
// launch`: a Python script logging 15 keys with the project's tracker under Accelerate gets a panel
// for every key and its hyperparameters in the table; a print-only script is offered its printed
// metrics, previewed, and charted once accepted.
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/panelgrid.h"
#include "app/studio/monitor/runactions.h"
#include "app/studio/monitor/rundiffdialog.h"
#include "app/studio/monitor/runsfilter.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/stdoutoffer.h"
#include "launcher/rundirectory.h"
#include "monitor/runannotations.h"
#include "tests/app/monitorpagesupport.h"
#include "tests/helpers/testsupport.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace accel;
using accel::app::MetricPlot;
using accel::app::MonitorPage;
using accel::app::RunsPage;
using accel::test::monitorpage::writeScript;

namespace {

// A finished run with these hyperparameters (the tracker's hparams.json) and one loss point.
QString makeRun(const QString &root, const QString &id, double created, const QByteArray &hparams)
{
    const QString path = test::monitorpage::makeRun(root, id, created, QStringLiteral("succeeded"));
    if (path.isEmpty() || !test::monitorpage::appendText(path + QStringLiteral("/hparams.json"), hparams) ||
        !test::monitorpage::appendText(
            path + QStringLiteral("/metrics/rank0.jsonl"),
            QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":0,\"step\":1,\"loss\":2}\n").arg(created).toUtf8()))
        return {};
    return path;
}

QStringList column(const QAbstractItemModel *model, int column)
{
    QStringList values;
    for (int row = 0; row < model->rowCount(); ++row)
        values.append(model->index(row, column).data().toString());
    return values;
}

// `accel launch` of a Python script on one CPU rank into `runDir`, waited for (with an Accelerate
// config file when given: the run directory then holds it as cluster.yaml).
test::ProcessResult launchPython(const QString &runDir, const QString &script, const QString &python,
                                 const QString &config = {})
{
    QStringList arguments = {QStringLiteral("launch"),
                             QStringLiteral("--cpu"),
                             QStringLiteral("--num_processes"),
                             QStringLiteral("1"),
                             QStringLiteral("--no_mirror"),
                             QStringLiteral("--run_dir"),
                             runDir};
    if (!config.isEmpty())
        arguments << QStringLiteral("--config_file") << config;
    return test::runAccel(
        arguments << script, 120000, {},
        {QStringLiteral("PYTHON_EXEC=") + python,
         QStringLiteral("PYTHONPATH=") + QDir(test::sourceDir()).filePath(QStringLiteral("resources/python"))});
}

} // namespace

class tst_RunsTable : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_runstable"));
    }
    void init() { QSettings().clear(); }

    void hyperparametersAreColumnsToFilterSortAndDiff()
    {
        QTemporaryDir root;
        const double now = QDateTime::currentSecsSinceEpoch();
        const QString a = makeRun(root.path(), QStringLiteral("20261128-010000-sweep-aaaa"), now - 300,
                                  R"({"lr": 0.001, "seed": 1, "optimizer": "adamw"})");
        const QString b = makeRun(root.path(), QStringLiteral("20261128-020000-sweep-bbbb"), now - 200,
                                  R"({"lr": 0.0003, "seed": 1, "optimizer": "adamw"})");
        const QString c = makeRun(root.path(), QStringLiteral("20261128-030000-sweep-cccc"), now - 100,
                                  R"({"lr": 0.01, "seed": 1, "optimizer": "sgd"})");
        QVERIFY(!a.isEmpty() && !b.isEmpty() && !c.isEmpty());
        QVERIFY(monitor::writeRunAnnotations(b, {QString(), QString(), {QStringLiteral("best")}}));
        RunsPage page;
        page.resize(1400, 900);
        page.show();
        QAbstractItemModelTester tester(page.runsFilter(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        page.setRunsRoot(root.path());
        auto *model = page.runsModel();
        const int lr = model->hyperparameterColumn(QStringLiteral("config/lr"));
        const int seed = model->hyperparameterColumn(QStringLiteral("config/seed"));
        const int optimizer = model->hyperparameterColumn(QStringLiteral("config/optimizer"));
        QVERIFY(lr >= 0 && seed >= 0 && optimizer >= 0);
        // What tells the runs apart is shown; the seed they share is a right click away.
        QVERIFY(page.isColumnShown(lr));
        QVERIFY(page.isColumnShown(optimizer));
        QVERIFY(!page.isColumnShown(seed));
        std::unique_ptr<QMenu> columns(page.createColumnsMenu(nullptr));
        QAction *seedAction = nullptr;
        for (QAction *action : columns->actions())
            seedAction = action->text() == QStringLiteral("config/seed") ? action : seedAction;
        QVERIFY(seedAction && !seedAction->isChecked());
        seedAction->trigger();
        QVERIFY(page.isColumnShown(seed));

        // Sorting by lr is numeric (0.0003 < 0.001 < 0.01), not by text.
        page.runsView()->sortByColumn(lr, Qt::AscendingOrder);
        QCOMPARE(column(page.runsView()->model(), lr),
                 (QStringList{QStringLiteral("0.0003"), QStringLiteral("0.001"), QStringLiteral("0.01")}));
        // The filter: hyperparameter conditions, tags and words.
        page.filterEdit()->setText(QStringLiteral("lr>0.0005"));
        QCOMPARE(page.runsView()->model()->rowCount(), 2);
        page.filterEdit()->setText(QStringLiteral("lr>0.0005 optimizer=adamw"));
        QCOMPARE(column(page.runsView()->model(), monitor::RunsModel::IdColumn), QStringList{QFileInfo(a).fileName()});
        page.filterEdit()->setText(QStringLiteral("tag:best"));
        QCOMPARE(column(page.runsView()->model(), monitor::RunsModel::IdColumn), QStringList{QFileInfo(b).fileName()});
        page.filterEdit()->setText(QStringLiteral("sgd"));
        QCOMPARE(column(page.runsView()->model(), monitor::RunsModel::IdColumn), QStringList{QFileInfo(c).fileName()});
        page.filterEdit()->setText(QStringLiteral("lr>abc"));
        QVERIFY2(page.runsFilter()->problem().contains(QStringLiteral("abc is not a number")),
                 qPrintable(page.runsFilter()->problem()));
        page.filterEdit()->clear();
        QCOMPARE(page.runsView()->model()->rowCount(), 3);

        // Diff of the selected runs: the keys that differ, per run.
        page.selectRuns({a, c});
        QVERIFY(page.diffButton()->isEnabled());
        page.diffButton()->click();
        auto *dialog = page.findChild<app::RunDiffDialog *>();
        QVERIFY(dialog);
        QCOMPARE(dialog->shownKeys(), (QStringList{QStringLiteral("config/lr"), QStringLiteral("config/optimizer")}));
        QCOMPARE(dialog->table()->item(1, 1)->text(), QStringLiteral("sgd"));
        dialog->showAllBox()->setChecked(true);
        QCOMPARE(dialog->shownKeys().size(), 3);
        dialog->close();
    }

    void runsAreRenamedAnnotatedOpenedExportedAndDeleted()
    {
        QTemporaryDir scratch;
        const QString root = scratch.filePath(QStringLiteral("runs"));
        const double now = QDateTime::currentSecsSinceEpoch();
        const QString a = makeRun(root, QStringLiteral("20261128-010000-train-aaaa"), now - 300, "{}");
        const QString b = makeRun(root, QStringLiteral("20261128-020000-train-bbbb"), now - 200, "{}");
        const QString live = makeRun(root, QStringLiteral("20261128-030000-train-cccc"), now - 100, "{}");
        QVERIFY(!a.isEmpty() && !b.isEmpty() && !live.isEmpty());
        {
            // A live run of this machine: its supervisor is this test process.
            auto run = launcher::RunDirectory::open(live, root);
            QJsonObject manifest = run->manifest();
            manifest.insert(QStringLiteral("state"), QStringLiteral("running"));
            manifest.insert(QStringLiteral("supervisor"),
                            launcher::RunDirectory::supervisorJson(rundir::currentSupervisorRecord()));
            QVERIFY(run->writeManifest(manifest));
        }
        RunsPage page;
        page.resize(1400, 900);
        page.show();
        page.setRunsRoot(root);
        page.selectRuns({a, b});
        MonitorPage *monitor = page.monitorPage();
        QCOMPARE(monitor->runLabels(), (QStringList{QStringLiteral("train · bbbb"), QStringLiteral("train · aaaa")}));

        // Rename in the table: the legend follows.
        auto *view = page.runsView();
        const int sourceRow = page.runsModel()->rowOf(QFileInfo(a).fileName());
        const QModelIndex name =
            page.runsFilter()->mapFromSource(page.runsModel()->index(sourceRow, monitor::RunsModel::NameColumn));
        QVERIFY(view->model()->setData(name, QStringLiteral("baseline")));
        QCOMPARE(monitor->runLabels(), (QStringList{QStringLiteral("train"), QStringLiteral("baseline")}));
        QCOMPARE(monitor::readRunAnnotations(a)->displayName, QStringLiteral("baseline"));
        app::RunActions *actions = page.runActions();
        QVERIFY(actions->setNotes(a, QStringLiteral("lr too high")));
        QVERIFY(actions->setTags(a, QStringLiteral("sweep, cpu")));
        QCOMPARE(monitor::readRunAnnotations(a)->tags, (QStringList{QStringLiteral("sweep"), QStringLiteral("cpu")}));

        // The menu of one run of this machine offers everything.
        page.selectRuns({a});
        std::unique_ptr<QMenu> menu(page.createRunMenu(nullptr));
        QStringList enabled;
        for (QAction *action : menu->actions()) {
            if (!action->isSeparator() && action->isEnabled())
                enabled.append(action->text());
        }
        QCOMPARE(enabled, (QStringList{QStringLiteral("Rename…"), QStringLiteral("Notes…"), QStringLiteral("Tags…"),
                                       QStringLiteral("Open folder"), QStringLiteral("Export as archive…"),
                                       QStringLiteral("Delete with its files…")}));
        QUrl opened;
        app::RunActions::setFolderOpener([&opened](const QUrl &url) {
            opened = url;
            return true;
        });
        QVERIFY(actions->openFolder(a));
        QCOMPARE(opened, QUrl::fromLocalFile(a));

        // Export in the background; the real tar reads the archive.
        const QString archive = scratch.filePath(QStringLiteral("a.tar.gz"));
        QSignalSpy exported(actions, &app::RunActions::exportFinished);
        actions->exportRun(a, archive);
        QTRY_COMPARE_WITH_TIMEOUT(exported.size(), 1, 10000);
        QCOMPARE(exported.at(0).at(2).toString(), QString());
        const auto listing = test::runProgram(QStringLiteral("tar"), {QStringLiteral("tzf"), archive});
        QVERIFY2(listing.out.contains(QStringLiteral("20261128-010000-train-aaaa/annotations.json")),
                 qPrintable(listing.out));

        // Delete asks first, saying what goes; Cancel keeps the run, Delete removes it.
        QString asked;
        auto answer = [&asked](QMessageBox::StandardButton button) {
            QTimer::singleShot(0, [&asked, button] {
                auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
                QVERIFY(box);
                asked = box->text();
                box->button(button)->click();
            });
        };
        answer(QMessageBox::Cancel);
        actions->confirmAndDelete({b});
        QVERIFY2(asked.startsWith(QStringLiteral("Delete 1 run and their 3 files")), qPrintable(asked));
        QVERIFY(QFileInfo::exists(b));
        answer(QMessageBox::Yes);
        actions->confirmAndDelete({b});
        QVERIFY(!QFileInfo::exists(b));
        QCOMPARE(page.runsModel()->rowOf(QFileInfo(b).fileName()), -1);
        // A live run is not deleted: stop it first.
        QStringList errors;
        QVERIFY(actions->deleteRuns({live}, &errors).isEmpty());
        QVERIFY2(errors.value(0).contains(QStringLiteral("stop it first")), qPrintable(errors.join(QLatin1Char('\n'))));
        QVERIFY(QFileInfo::exists(live));
    }

    // A real run of a Python script logging 15 different keys with the project's tracker under
    // Accelerate (log_with=AccelStudioTracker()), launched by the real accel: every key is charted
    // and the tracker's config is in the table.
    void realRunLoggingFifteenKeysChartsEveryKey()
    {
        const QString python = qEnvironmentVariable("ACCEL_PYTHON");
        if (!QFileInfo(QDir(test::binDir()).filePath(QStringLiteral("accel"))).isExecutable())
            QSKIP("accel is not built");
        if (python.isEmpty() ||
            test::runProgram(python, {QStringLiteral("-c"), QStringLiteral("import accelerate")}).exitCode != 0)
            QSKIP("no Python with accelerate (ACCEL_PYTHON)");
        QTemporaryDir scratch;
        const QString root = scratch.filePath(QStringLiteral("runs"));
        const QString script = writeScript(scratch.path(), QStringLiteral("fifteen.py"), R"(import math
from accelerate import Accelerator
from accel_studio_tracker import AccelStudioTracker

accelerator = Accelerator(cpu=True, log_with=AccelStudioTracker())
accelerator.init_trackers("fifteen", config={"lr": 3e-4, "batch_size": 8, "model": {"layers": 2}})
for step in range(1, 6):
    accelerator.log({"loss": 2.0 / step, "lr": 3e-4, "grad_norm": 1.0 / step, "samples_per_s": 100.0 + step,
                     "epoch": step / 5, "train/accuracy": 0.1 * step, "train/perplexity": math.exp(2.0 / step),
                     "train/tokens": 512 * step, "eval/loss": 2.2 / step, "eval/accuracy": 0.09 * step,
                     "timing/forward_s": 0.01, "timing/backward_s": 0.02, "timing/data_s": 0.003,
                     "memory/allocated_bytes": 1e6 * step, "custom/score": step * step}, step=step)
accelerator.end_training()
)");
        const QString config = writeScript(scratch.path(), QStringLiteral("accelerate.yaml"),
                                           "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\n"
                                           "mixed_precision: 'no'\nnum_machines: 1\nnum_processes: 1\nuse_cpu: true\n");
        const QString runDir = root + QStringLiteral("/20261128-010000-fifteen-0001");
        const auto launched = launchPython(runDir, script, python, config);
        QVERIFY2(launched.exitCode == 0, qPrintable(launched.err + launched.out));

        RunsPage page;
        page.resize(1600, 1000);
        page.show();
        page.setRunsRoot(root);
        QCOMPARE(page.selectedRuns(), QStringList{runDir});
        const QStringList keys = {QStringLiteral("loss"),
                                  QStringLiteral("lr"),
                                  QStringLiteral("grad_norm"),
                                  QStringLiteral("samples_per_s"),
                                  QStringLiteral("epoch"),
                                  QStringLiteral("train/accuracy"),
                                  QStringLiteral("train/perplexity"),
                                  QStringLiteral("train/tokens"),
                                  QStringLiteral("eval/loss"),
                                  QStringLiteral("eval/accuracy"),
                                  QStringLiteral("timing/forward_s"),
                                  QStringLiteral("timing/backward_s"),
                                  QStringLiteral("timing/data_s"),
                                  QStringLiteral("memory/allocated_bytes"),
                                  QStringLiteral("custom/score")};
        QCOMPARE(keys.size(), 15);
        app::PanelGrid *grid = page.monitorPage()->panels();
        const MonitorPage::Chart builtIns[] = {MonitorPage::LossChart, MonitorPage::LrChart, MonitorPage::GradNormChart,
                                               MonitorPage::ThroughputChart};
        // Each key is on a shown panel with its five points: the four the built-in charts show, a panel
        // of its own for each other one.
        for (int i = 0; i < keys.size(); ++i) {
            MetricPlot *plot = i < 4 ? page.monitorPage()->chart(builtIns[i]) : page.monitorPage()->panel(keys[i]);
            QTRY_VERIFY2_WITH_TIMEOUT(plot && plot->rawPoints() == 5 && plot->isVisible(), qPrintable(keys[i]), 5000);
            QVERIFY2(plot->names().contains(keys[i]), qPrintable(keys[i]));
        }
        // Beside them only the supervisor's CPU and memory samples, in their own section.
        QStringList scripts;
        for (const QString &key : grid->shownKeys()) {
            if (grid->sectionOfPanel(key) != QStringLiteral("System"))
                scripts.append(key);
        }
        QCOMPARE(scripts.size(), 15);
        QTRY_COMPARE(grid->sections(),
                     (QStringList{QStringLiteral("Charts"), QStringLiteral("custom"), QStringLiteral("eval"),
                                  QStringLiteral("memory"), QStringLiteral("timing"), QStringLiteral("train"),
                                  QStringLiteral("System")}));
        // The tracker's init_trackers(config=...) is in the runs table.
        const int row = page.runsModel()->rowOf(QFileInfo(runDir).fileName());
        QCOMPARE(page.runsModel()
                     ->index(row, page.runsModel()->hyperparameterColumn(QStringLiteral("config/model.layers")))
                     .data()
                     .toString(),
                 QStringLiteral("2"));
    }

    // A script that only prints: the page offers to read its output and shows what it would read.
    void printOnlyRunIsChartedFromItsOutput()
    {
        if (!QFileInfo(QDir(test::binDir()).filePath(QStringLiteral("accel"))).isExecutable())
            QSKIP("accel is not built");
        QTemporaryDir scratch;
        const QString root = scratch.filePath(QStringLiteral("runs"));
        const QString script = writeScript(scratch.path(), QStringLiteral("prints.py"),
                                           "for step in range(1, 9):\n"
                                           "    print(f'step={step} loss={2.0 / step:.4f} accuracy={0.1 * step:.2f}')\n"
                                           "print({'loss': 0.2, 'learning_rate': 5e-05, 'epoch': 1.0})\n");
        const QString runDir = root + QStringLiteral("/20261128-010000-prints-0001");
        const auto launched = launchPython(runDir, script, QStringLiteral("python3"));
        QVERIFY2(launched.exitCode == 0, qPrintable(launched.err + launched.out));
        RunsPage page;
        page.resize(1400, 900);
        page.show();
        page.setRunsRoot(root);
        MonitorPage *monitor = page.monitorPage();
        QTRY_VERIFY_WITH_TIMEOUT(monitor->stdoutOffer()->isVisible(), 5000);
        QCOMPARE(monitor->stdoutOffer()->preview().samples, 9);
        QVERIFY2(monitor->stdoutOffer()->text().contains(QStringLiteral("loss, accuracy, lr, epoch")),
                 qPrintable(monitor->stdoutOffer()->text()));
        QVERIFY2(monitor->emptyStateText().contains(QStringLiteral("finished without logging a metric")),
                 qPrintable(monitor->emptyStateText()));
        monitor->stdoutOffer()->acceptButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(monitor->chart(MonitorPage::LossChart)->rawPoints(), qint64(9), 5000);
        QTRY_VERIFY(monitor->panels()->shownKeys().contains(QStringLiteral("accuracy")));
        QVERIFY(monitor->emptyStateText().isEmpty());
    }
};

QTEST_MAIN(tst_RunsTable)
#include "tst_runstable.moc"
