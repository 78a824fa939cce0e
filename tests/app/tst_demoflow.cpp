// The first-run demo end to end in the real main window: the demo prepared on the Launch page
// (gpt recipe on the bundled corpus, 2 CPU ranks, fewer steps typed into the recipe form), the
// demo button clicked, the window switches to the Runs page whose monitor shows 2 rank rows and
// loss points for both ranks; the job the form wrote is in the run directory. Then the window is
// closed while the detached run goes on, and a new window lists it as running and follows it to
// the end. Skipped when accel or accel-worker (libtorch) is not built.
#include "app/studio/launch/launchpage.h"
#include "app/studio/launch/recipeform.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/qcustomplotinclude.h"
#include "app/studio/monitor/runspage.h"
#include "launcher/jobfile.h"
#include "monitor/runsmodel.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using namespace accel;
using accel::app::LaunchPage;
using accel::app::MainWindow;
using accel::app::MonitorPage;
using accel::app::Page;

namespace {

int graphPoints(const app::MetricPlot *plot, int graph)
{
    return graph < plot->plot()->graphCount() ? plot->plot()->graph(graph)->data()->size() : 0;
}

QString stateOf(monitor::RunsModel *model, const QString &id)
{
    const int row = model->rowOf(id);
    return row < 0 ? QString() : model->index(row, monitor::RunsModel::StateColumn).data().toString();
}

} // namespace

class tst_DemoFlow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void demoFromTheGuiShowsRanksAndLoss();

private:
    QTemporaryDir m_scratch;
};

void tst_DemoFlow::initTestCase()
{
    QVERIFY(m_scratch.isValid());
    // Runs, settings and caches stay inside the scratch folder.
    qputenv("XDG_DATA_HOME", m_scratch.filePath(QStringLiteral("data")).toLocal8Bit());
    qputenv("XDG_CONFIG_HOME", m_scratch.filePath(QStringLiteral("config")).toLocal8Bit());
    qputenv("XDG_CACHE_HOME", m_scratch.filePath(QStringLiteral("cache")).toLocal8Bit());
    QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_demoflow"));
    QSettings().clear();
}

void tst_DemoFlow::demoFromTheGuiShowsRanksAndLoss()
{
    const QString accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    const QString fromEnv = qEnvironmentVariable("ACCEL_WORKER_PROGRAM"); // accel launch reads it too
    const QString worker = fromEnv.isEmpty() ? QDir(test::binDir()).filePath(QStringLiteral("accel-worker")) : fromEnv;
    if (!QFileInfo(accel).isExecutable() || !QFileInfo(worker).isExecutable())
        QSKIP("accel or accel-worker is not built (the worker needs libtorch)");
    const QString demoJob = LaunchPage::findDemoJob();
    QVERIFY2(!demoJob.isEmpty(), "resources/jobs/demo-gpt.yaml not found");

    auto window = std::make_unique<MainWindow>();
    window->resize(1280, 860);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    LaunchPage *launch = window->launchPage();
    launch->setAccelProgram(accel);
    launch->prepareDemo(demoJob, m_scratch.filePath(QStringLiteral("demo_config.yaml")));
    window->showPage(Page::Launch);
    QCOMPARE(launch->programKind(), LaunchPage::ProgramKind::Recipe);

    // The demo job is in the form; fewer steps are typed into it so the run is short.
    app::RecipeForm *form = launch->recipeForm();
    QCOMPARE(form->recipe(), QStringLiteral("gpt"));
    QCOMPARE(form->value(QStringLiteral("model.n_embd")), QStringLiteral("128"));
    auto *steps = qobject_cast<QLineEdit *>(form->editor(QStringLiteral("training.max_steps")));
    QVERIFY(steps);
    steps->selectAll();
    QTest::keyClicks(steps, QStringLiteral("200"));
    QCOMPARE(form->value(QStringLiteral("training.max_steps")), QStringLiteral("200"));
    for (const auto &[key, value] : {std::pair{"training.log_every", "10"}, std::pair{"training.eval_every", "0"},
                                     std::pair{"training.checkpoint_every", "0"}, std::pair{"sample.length", "16"}})
        form->setValue(QString::fromLatin1(key), QString::fromLatin1(value));
    QVERIFY(form->isValid());
    QVERIFY2(launch->commandText().contains(QStringLiteral("--job ") + launch->stagedJobPath()),
             qPrintable(launch->commandText()));

    QVERIFY(launch->demoButton()->isVisible());
    QSignalSpy launched(launch, &LaunchPage::launched);
    QSignalSpy failed(launch, &LaunchPage::launchFailed);
    launch->demoButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(launched.count() + failed.count() > 0, 60000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const QString runDir = launch->runDirectory();
    const QString id = launch->runId();
    QVERIFY(runDir.startsWith(m_scratch.filePath(QStringLiteral("data"))));

    // The form's job was written into the run directory and is what the ranks run.
    auto written = launcher::JobFile::load((runDir + QStringLiteral("/job.yaml")).toStdString());
    QVERIFY2(written, written ? "" : written.error().toString().c_str());
    QCOMPARE(written->value("training.max_steps"), std::string("200"));

    // The window follows the run on the Runs page: 2 rank rows, loss points from both ranks.
    QTRY_COMPARE_WITH_TIMEOUT(window->currentPage(), Page::Runs, 5000);
    app::RunsPage *runs = window->runsPage();
    QTRY_COMPARE_WITH_TIMEOUT(runs->selectedRuns(), QStringList{runDir}, 10000);
    MonitorPage *monitorPage = runs->monitorPage();
    QTRY_COMPARE_WITH_TIMEOUT(monitorPage->ranksView()->model()->rowCount(), 2, 60000);
    app::MetricPlot *loss = monitorPage->chart(MonitorPage::LossChart);
    QTRY_VERIFY_WITH_TIMEOUT(graphPoints(loss, 0) >= 2 && graphPoints(loss, 1) >= 2, 60000);
    QVERIFY(std::isfinite(loss->plot()->graph(0)->data()->at(0)->value));

    // Closing the studio leaves the detached run going; a new window lists it as running.
    window.reset();
    auto reopened = std::make_unique<MainWindow>();
    reopened->show();
    monitor::RunsModel *model = reopened->runsPage()->runsModel();
    model->setRefreshInterval(250);
    QTRY_VERIFY_WITH_TIMEOUT(model->rowOf(id) >= 0, 10000);
    QCOMPARE(stateOf(model, id), QStringLiteral("running"));

    // ... and follows it to the end: the demo finishes, with loss points over the whole run.
    reopened->runsPage()->selectRuns({runDir});
    QTRY_COMPARE_WITH_TIMEOUT(stateOf(model, id), QStringLiteral("succeeded"), 120000);
    MonitorPage *again = reopened->runsPage()->monitorPage();
    QTRY_COMPARE_WITH_TIMEOUT(again->ranksView()->model()->rowCount(), 2, 10000);
    app::MetricPlot *finalLoss = again->chart(MonitorPage::LossChart);
    QTRY_VERIFY_WITH_TIMEOUT(graphPoints(finalLoss, 0) >= 10 && graphPoints(finalLoss, 1) >= 10, 10000);
    QVERIFY(QFileInfo::exists(runDir + QStringLiteral("/model.safetensors")));
}

QTEST_MAIN(tst_DemoFlow)
#include "tst_demoflow.moc"
