// The studio's FP8 comparison (Tools → Compare FP8 Recipes…): a short real `accel bench fp8` run
// from the dialog gives the same table and curves as the CLI's own --json run, progress is shown
// while it runs, and Cancel leaves no process behind.
#include "app/studio/fp8/fp8comparedialog.h"
#include "app/studio/fp8/fp8comparison.h"
#include "app/studio/fp8/fp8resultsmodel.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/qcustomplotinclude.h"
#include "tests/helpers/testsupport.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <csignal>

using namespace accel::app;

namespace {

Fp8ComparisonOptions shortOptions(int steps)
{
    Fp8ComparisonOptions options;
    options.steps = steps;
    options.threads = 1;
    options.shapes = {QStringLiteral("gpt-tiny")};
    options.precisions = {QStringLiteral("bf16"), QStringLiteral("fp8-msamp-o2"), QStringLiteral("fp8-ao")};
    return options;
}

// Processes whose command line names `text` (the benchmark's output folder is in every worker's).
QList<qint64> processesNaming(const QString &text)
{
    QList<qint64> found;
    const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &entry : entries) {
        bool isPid = false;
        const qint64 pid = entry.toLongLong(&isPid);
        if (!isPid)
            continue;
        QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(entry));
        if (cmdline.open(QIODevice::ReadOnly) && cmdline.readAll().contains(text.toUtf8()))
            found << pid;
    }
    return found;
}

QCPGraph *graphNamed(QCustomPlot *plot, const QString &name)
{
    for (int i = 0; i < plot->graphCount(); ++i) {
        if (plot->graph(i)->name() == name)
            return plot->graph(i);
    }
    return nullptr;
}

void compareCurve(QCPGraph *graph, const QJsonArray &points)
{
    QVERIFY(graph);
    QCOMPARE(graph->dataCount(), int(points.size()));
    for (int i = 0; i < points.size(); ++i) {
        QCOMPARE(graph->data()->at(i)->key, points[i].toArray()[0].toDouble());
        QCOMPARE(graph->data()->at(i)->value, points[i].toArray()[1].toDouble());
    }
}

} // namespace

class tst_Fp8View : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_fp8view"));
        QSettings().clear();
        QVERIFY2(QFileInfo(accel::test::binDir() + QStringLiteral("/accel-worker")).isExecutable(),
                 "accel-worker is not built");
    }

    void resultParsingNamesWhatIsWrong()
    {
        QString error;
        QVERIFY(!parseFp8Comparison("{\"schema\":\"accel.bench-fp8\",\"version\":7,\"runs\":[]}", &error));
        QVERIFY2(error.contains(QStringLiteral("version 7")), qPrintable(error));
        QVERIFY(!parseFp8Comparison("not json", &error));
        QVERIFY(error.contains(QStringLiteral("not a JSON object")));
        QVERIFY(!parseFp8Comparison("{\"schema\":\"accel.bench-fp8\",\"version\":1,\"runs\":[{\"shape\":\"gpt\"}]}",
                                    &error));
        QVERIFY2(error.contains(QStringLiteral("run 1")), qPrintable(error));
        QVERIFY(!parseFp8Progress("accel bench: gpt fp32, 10 steps ..."));
    }

    void nothingChosenIsRefused()
    {
        Fp8CompareDialog dialog;
        Fp8ComparisonOptions options = shortOptions(10);
        options.precisions.clear();
        dialog.setOptions(options);
        QVERIFY(!dialog.run());
        QVERIFY(!dialog.isRunning());
        QVERIFY(dialog.statusText().contains(QStringLiteral("at least one precision")));
    }

    void menuOpensTheDialog()
    {
        MainWindow window;
        auto *action = window.findChild<QAction *>(QStringLiteral("compareFp8Action"));
        QVERIFY(action);
        QVERIFY(action->text().contains(QStringLiteral("FP8")));
        action->trigger();
        auto *dialog = window.findChild<Fp8CompareDialog *>();
        QVERIFY(dialog);
        QVERIFY(dialog->isVisible());
        action->trigger(); // the same dialog again, not a second one
        QCOMPARE(window.findChildren<Fp8CompareDialog *>().size(), 1);
        // By default it compares every precision on the benchmark's two shapes.
        QCOMPARE(dialog->options().precisions, fp8BenchPrecisions());
        QCOMPARE(dialog->options().shapes, QStringList({QStringLiteral("gpt"), QStringLiteral("gpt-deep")}));
        QCOMPARE(dialog->options().steps, 500);
        dialog->close();
    }

    void shortComparisonMatchesTheCli()
    {
        Fp8CompareDialog dialog;
        dialog.setAccelProgram(accel::test::binDir() + QStringLiteral("/accel"));
        dialog.setOptions(shortOptions(10));
        dialog.show();
        QAbstractItemModelTester tester(dialog.resultsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto *bar = dialog.findChild<QProgressBar *>(QStringLiteral("progress"));
        QVERIFY(bar);
        QList<int> seen; // progress values while running
        connect(bar, &QProgressBar::valueChanged, this, [&seen](int value) { seen << value; });
        QSignalSpy finished(&dialog, &Fp8CompareDialog::finished);
        QVERIFY(dialog.run());
        QVERIFY(dialog.isRunning());
        QVERIFY(!dialog.findChild<QPushButton *>(QStringLiteral("runButton"))->isEnabled());
        QVERIFY(dialog.findChild<QPushButton *>(QStringLiteral("cancelButton"))->isEnabled());
        QVERIFY2(finished.wait(120000),
                 qPrintable(dialog.progressText() + QStringLiteral(" / ") + dialog.statusText()));
        QVERIFY2(finished.first().first().toBool(), qPrintable(dialog.statusText()));
        QCOMPARE(bar->maximum(), 3 * 10);
        QCOMPARE(bar->value(), 30);
        // Progress moved through the runs (each run's start is (run - 1) * steps).
        QVERIFY2(seen.contains(10) && seen.contains(20), qPrintable(QString::number(seen.size())));
        QCOMPARE(dialog.progressText(), QStringLiteral("Done"));

        // The CLI's own run with the same options.
        QTemporaryDir out;
        QVERIFY(out.isValid());
        Fp8ComparisonOptions options = shortOptions(10);
        options.outputDirectory = out.path();
        const auto cli = accel::test::runAccel(fp8BenchArguments(options), 120000);
        QVERIFY2(cli.exitCode == 0, qPrintable(cli.err.right(2000)));
        const QJsonObject json = QJsonDocument::fromJson(cli.out.toUtf8()).object();
        const QJsonArray runs = json.value(QStringLiteral("runs")).toArray();
        QCOMPARE(runs.size(), 3);

        const Fp8ResultsModel *model = dialog.resultsModel();
        QCOMPARE(model->rowCount(), int(runs.size()));
        QCOMPARE(model->headerData(Fp8ResultsModel::LossAtFifth, Qt::Horizontal).toString(), QStringLiteral("Loss @2"));
        QCOMPARE(model->headerData(Fp8ResultsModel::LossAtEnd, Qt::Horizontal).toString(), QStringLiteral("Loss @10"));
        auto value = [&](int row, int column) {
            return model->data(model->index(row, column), Fp8ResultsModel::ValueRole).toDouble();
        };
        auto text = [&](int row, int column) { return model->index(row, column).data().toString(); };
        for (int row = 0; row < runs.size(); ++row) {
            const QJsonObject run = runs[row].toObject();
            QCOMPARE(text(row, Fp8ResultsModel::Shape), run.value(QStringLiteral("shape")).toString());
            QCOMPARE(text(row, Fp8ResultsModel::Precision), run.value(QStringLiteral("precision")).toString());
            const QJsonArray at = run.value(QStringLiteral("loss_at")).toArray();
            QCOMPARE(at.size(), 3);
            for (int i = 0; i < 3; ++i)
                QCOMPARE(value(row, Fp8ResultsModel::LossAtFifth + i), at[i].toArray()[1].toDouble());
            QCOMPARE(value(row, Fp8ResultsModel::EvalLoss), run.value(QStringLiteral("eval_loss")).toDouble());
            QCOMPARE(value(row, Fp8ResultsModel::VsBf16),
                     run.value(QStringLiteral("eval_loss_vs_bf16_percent")).toDouble());
            QCOMPARE(value(row, Fp8ResultsModel::WeightBytes), run.value(QStringLiteral("weight_bytes")).toDouble());
            QCOMPARE(value(row, Fp8ResultsModel::GradientBytes),
                     run.value(QStringLiteral("gradient_bytes")).toDouble());
            QCOMPARE(value(row, Fp8ResultsModel::OptimizerBytes),
                     run.value(QStringLiteral("optimizer_state_bytes")).toDouble());
            QVERIFY(value(row, Fp8ResultsModel::StepTime) > 0); // timing differs between the two runs
            QVERIFY(text(row, Fp8ResultsModel::StepTime).endsWith(QStringLiteral(" ms")));
        }
        // bf16 is the reference; MS-AMP O2's moments take 3 bytes per parameter against AdamW's 8.
        QCOMPARE(text(0, Fp8ResultsModel::VsBf16), QStringLiteral("+0.00 %"));
        QCOMPARE(value(1, Fp8ResultsModel::OptimizerBytes) * 8, value(0, Fp8ResultsModel::OptimizerBytes) * 3);

        // One chart per shape; per precision a training curve and an evaluation curve with the
        // CLI's points.
        QCOMPARE(dialog.plots().size(), 1);
        QCustomPlot *plot = dialog.plots().first();
        QCOMPARE(plot->objectName(), QStringLiteral("lossPlot_gpt-tiny"));
        QCOMPARE(plot->graphCount(), 2 * int(runs.size()));
        QCOMPARE(plot->legend->itemCount(), int(runs.size()));
        for (const QJsonValue &value : runs) {
            const QJsonObject run = value.toObject();
            const QString precision = run.value(QStringLiteral("precision")).toString();
            const QJsonArray loss = run.value(QStringLiteral("loss")).toArray();
            QCOMPARE(loss.size(), 10);
            compareCurve(graphNamed(plot, precision), loss);
            compareCurve(graphNamed(plot, precision + QStringLiteral(" (eval)")),
                         run.value(QStringLiteral("eval_loss_curve")).toArray());
        }
    }

    // Regression: at 1024x700 the table of six results showed five and a half rows behind a
    // scrollbar. Every row of one shape's six precisions is now whole; with three shapes (18 rows)
    // the table scrolls and the chart keeps its minimum height.
    void resultsFitAt1024x700()
    {
        for (const int shapes : {1, 3}) {
            Fp8CompareDialog dialog;
            dialog.resize(1024, 700);
            dialog.show();
            QVERIFY(QTest::qWaitForWindowExposed(&dialog));
            Fp8Comparison comparison;
            comparison.steps = 10;
            comparison.shapes = fp8BenchShapes().mid(0, shapes);
            for (const QString &shape : comparison.shapes) {
                for (const QString &precision : fp8BenchPrecisions()) {
                    Fp8ComparisonRun run;
                    run.shape = shape;
                    run.precision = precision;
                    run.lossAt = {{2, 4.0}, {5, 3.5}, {10, 3.0}};
                    run.lossSteps = {1, 10};
                    run.loss = {5.0, 3.0};
                    comparison.runs.push_back(run);
                }
            }
            dialog.showComparison(comparison);
            QApplication::processEvents();
            QTableView *table = dialog.resultsTable();
            const QRect viewport = table->viewport()->rect();
            const int rows = dialog.resultsModel()->rowCount();
            QCOMPARE(rows, 6 * shapes);
            int whole = 0;
            for (int row = 0; row < rows; ++row)
                whole += viewport.contains(table->visualRect(dialog.resultsModel()->index(row, 0)));
            QCOMPARE(whole, shapes == 1 ? 6 : std::max(6, whole));
            QCOMPARE(dialog.plots().size(), shapes);
            for (QCustomPlot *plot : dialog.plots())
                QVERIFY2(plot->height() >= 240, qPrintable(QString::number(plot->height())));
        }
    }

    void cancelLeavesNoProcess()
    {
        Fp8CompareDialog dialog;
        dialog.setAccelProgram(accel::test::binDir() + QStringLiteral("/accel"));
        dialog.setOptions(shortOptions(100000)); // far longer than the test waits
        QSignalSpy finished(&dialog, &Fp8CompareDialog::finished);
        QVERIFY(dialog.run());
        const qint64 accelPid = dialog.processId();
        QVERIFY(accelPid > 0);
        const QString folder = dialog.outputDirectory();
        // Wait until a worker trains (its job file lies in the benchmark's folder) and has logged.
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty() ||
                                     (dialog.progressText().contains(QStringLiteral("step ")) &&
                                      !dialog.progressText().endsWith(QStringLiteral("step 0 of 100000"))),
                                 120000);
        QVERIFY2(finished.isEmpty(), qPrintable(dialog.statusText()));
        QVERIFY(processesNaming(folder + QStringLiteral("/gpt-tiny/bf16/job.yaml")).size() >= 1);
        dialog.findChild<QPushButton *>(QStringLiteral("cancelButton"))->click();
        QVERIFY2(finished.wait(30000), qPrintable(dialog.progressText()));
        QCOMPARE(finished.first().first().toBool(), false);
        QVERIFY(dialog.statusText().startsWith(QStringLiteral("Cancelled")));
        QVERIFY(!dialog.isRunning());
        QVERIFY(dialog.findChild<QPushButton *>(QStringLiteral("runButton"))->isEnabled());
        QCOMPARE(dialog.resultsModel()->rowCount(), 0);
        // Neither the benchmark nor any worker it started is left.
        QTRY_VERIFY_WITH_TIMEOUT(processesNaming(folder).isEmpty(), 10000);
        QVERIFY(::kill(pid_t(accelPid), 0) == -1 && errno == ESRCH);
    }
};

QTEST_MAIN(tst_Fp8View)
#include "tst_fp8view.moc"
