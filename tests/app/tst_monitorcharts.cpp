// The Monitor view's charts on real run directories written by the test: export as PNG and CSV,
// long series decimated to the plot width and smoothed, several runs overlaid, the crosshair's
// readout of every rank, units on the axes, the debiased moving average, GPU samples per rank and
// per GPU, and many ranks summarised instead of a legend.
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/plotcurves.h"

#include "tests/app/monitorpagesupport.h"

#include <QImage>
#include <QLabel>
#include <QMouseEvent>
#include <QSettings>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

using namespace accel;
using namespace accel::test::monitorpage;
using accel::app::MonitorPage;

class tst_MonitorCharts : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The Monitor keeps its x axis, smoothing and panel layouts in the settings: each case starts clean.
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_monitorcharts"));
    }
    void init() { QSettings().clear(); }
    void exportsPngAndCsv();
    void longSeriesAreDecimatedAndSmoothed();
    void severalRunsOverlay();
    void crosshairReportsEveryRanksValue();
    void manyRanksReplaceTheLegendWithTheirCount();
    void unitsOnAxesAndSmoothingOnlyForNoisyCharts();
    void movingAverageIsDebiased();
    void gpuSamplesArePlottedPerRankAndPerGpu();
};

void tst_MonitorCharts::exportsPngAndCsv()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-export-0004"));
    QVERIFY(!run.isEmpty());
    QByteArray lines;
    for (int step = 0; step < 50; ++step)
        lines += metricsLine(0, step, 2.0 + step);
    QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
    MonitorPage page;
    page.resize(1000, 700);
    page.show();
    page.setRuns({run});
    QTRY_COMPARE_WITH_TIMEOUT(graphPoints(page.chart(MonitorPage::LossChart), 0), 50, 5000);
    // As a user sees it before exporting: laid out (on the event loop's turns after the data).
    const auto *loss = page.chart(MonitorPage::LossChart);
    QTRY_VERIFY(loss->isVisible() && loss->width() > 100 && loss->height() > 50);

    const QString png = root.filePath(QStringLiteral("loss.png"));
    QVERIFY(page.exportPng(MonitorPage::LossChart, png));
    const QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() > 100 && image.height() > 50);

    const QString csv = root.filePath(QStringLiteral("loss.csv"));
    QString error;
    QVERIFY2(page.exportCsv(MonitorPage::LossChart, csv, &error), qPrintable(error));
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QList<QByteArray> rows = file.readAll().trimmed().split('\n');
    QCOMPARE(rows.size(), 51);
    QCOMPARE(rows.first(), QByteArray("run,rank,metric,step,time,value"));
    const QList<QByteArray> last = rows.last().split(',');
    QCOMPARE(last.at(1), QByteArray("0"));
    QCOMPARE(last.at(2), QByteArray("loss"));
    QCOMPARE(last.at(3), QByteArray("49"));
    QCOMPARE(last.at(5).toDouble(), 51.0);

    QVERIFY(!page.exportCsv(MonitorPage::LossChart, root.filePath(QStringLiteral("missing/dir/x.csv")), &error));
    QVERIFY(error.contains(QStringLiteral("missing/dir/x.csv")));
}

void tst_MonitorCharts::longSeriesAreDecimatedAndSmoothed()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-long-0005"));
    QVERIFY(!run.isEmpty());
    QByteArray lines;
    const int count = 20000;
    for (int step = 0; step < count; ++step)
        lines += metricsLine(0, step, step % 100 == 50 ? 10.0 : 1.0); // spikes every 100 steps
    QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
    MonitorPage page;
    page.resize(1000, 700);
    page.show();
    page.setRuns({run});
    auto *loss = page.chart(MonitorPage::LossChart);
    QTRY_COMPARE_WITH_TIMEOUT(loss->rawPoints(), qint64(count), 10000);
    QTRY_VERIFY(graphPoints(loss, 0) > 0);
    const int pixels = loss->plot()->axisRect()->width();
    QVERIFY(pixels > 10);
    QVERIFY2(graphPoints(loss, 0) <= 2 * pixels + 2, qPrintable(QString::number(graphPoints(loss, 0))));
    QCOMPARE(loss->plot()->yAxis->range().contains(10.0), true); // spikes survive decimation
    double highest = 0;
    for (auto it = loss->plot()->graph(0)->data()->constBegin(); it != loss->plot()->graph(0)->data()->constEnd(); ++it)
        highest = std::max(highest, it->value);
    QCOMPARE(highest, 10.0);

    // The average is drawn over the raw curve, which keeps its spikes.
    page.setSmoothing(0.95); // heavy (W&B's direction)
    loss->replotNow();
    QCOMPARE(loss->plot()->graphCount(), 2);
    highest = 0;
    for (auto it = loss->plot()->graph(1)->data()->constBegin(); it != loss->plot()->graph(1)->data()->constEnd(); ++it)
        highest = std::max(highest, it->value);
    QVERIFY2(highest < 10.0 && highest > 1.0, qPrintable(QString::number(highest)));
    highest = 0;
    for (auto it = loss->plot()->graph(0)->data()->constBegin(); it != loss->plot()->graph(0)->data()->constEnd(); ++it)
        highest = std::max(highest, it->value);
    QCOMPARE(highest, 10.0);
}

void tst_MonitorCharts::severalRunsOverlay()
{
    QTemporaryDir root;
    const QString a = makeRun(root.path(), QStringLiteral("20261122-010000-a-0006"));
    const QString b = makeRun(root.path(), QStringLiteral("20261122-010001-b-0007"));
    QVERIFY(!a.isEmpty() && !b.isEmpty());
    QVERIFY(appendText(a + QStringLiteral("/metrics/rank0.jsonl"), metricsLine(0, 1, 2.0) + metricsLine(0, 2, 1.5)));
    QVERIFY(appendText(b + QStringLiteral("/metrics/rank0.jsonl"), metricsLine(0, 1, 3.0)));
    QVERIFY(appendText(b + QStringLiteral("/metrics/rank1.jsonl"), metricsLine(1, 1, 3.0)));
    MonitorPage page;
    page.setSmoothing(0); // raw curves only: one graph per rank and mean
    page.setRuns({a, b});
    auto *loss = page.chart(MonitorPage::LossChart);
    QCOMPARE(loss->storeCount(), 2);
    // a: rank 0; b: ranks 0, 1 and their mean.
    QTRY_COMPARE_WITH_TIMEOUT(loss->plot()->graphCount(), 4, 5000);
    QCOMPARE(loss->plot()->graph(0)->name(), QStringLiteral("a")); // a run of one rank: its name alone
    QVERIFY(loss->plot()->graph(1)->pen().color() != loss->plot()->graph(0)->pen().color());
    QTRY_COMPARE(page.ranksView()->model()->rowCount(), 1);
    page.setDetailRun(1);
    QTRY_COMPARE(page.ranksView()->model()->rowCount(), 2);
    // Dropping a run keeps the other one's data.
    page.setRuns({b});
    QCOMPARE(loss->storeCount(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(loss->plot()->graphCount(), 3, 5000);
    QCOMPARE(page.ranksView()->model()->rowCount(), 2);
}

void tst_MonitorCharts::crosshairReportsEveryRanksValue()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-cross-0010"));
    QVERIFY(!run.isEmpty());
    for (int rank = 0; rank < 2; ++rank) {
        QByteArray lines;
        for (int step = 0; step <= 20; ++step)
            lines += metricsLine(rank, step, (rank == 0 ? 3.0 : 5.0) - step * 0.1);
        QVERIFY(appendText(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), lines));
    }
    MonitorPage page;
    page.resize(1200, 800);
    page.show();
    page.setRuns({run});
    auto *loss = page.chart(MonitorPage::LossChart);
    QTRY_COMPARE_WITH_TIMEOUT(graphPoints(loss, 1), 21, 5000);
    loss->replotNow();
    // Regression: the legend row capped the plot's width at the legend's text width.
    QVERIFY2(loss->plot()->axisRect()->width() > loss->plot()->width() / 2,
             qPrintable(QStringLiteral("%1 of %2").arg(loss->plot()->axisRect()->width()).arg(loss->plot()->width())));
    const QStringList lines = loss->readout(10.3); // nearest step: 10
    QCOMPARE(lines, (QStringList{QStringLiteral("rank 0: 2 (step 10)"), QStringLiteral("rank 1: 4 (step 10)")}));
    // The pointer over step 10 shows the same lines (and the crosshair).
    const QPoint at(int(loss->plot()->xAxis->coordToPixel(10)), loss->plot()->axisRect()->center().y());
    QMouseEvent move(QEvent::MouseMove, QPointF(at), QPointF(loss->plot()->mapToGlobal(at)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QCoreApplication::sendEvent(loss->plot(), &move);
    QVERIFY2(loss->crosshairText().contains(QStringLiteral("rank 0: 2 (step 10)")) &&
                 loss->crosshairText().contains(QStringLiteral("rank 1: 4 (step 10)")),
             qPrintable(loss->crosshairText()));
    // Memory reads in binary units.
    const QStringList memory = page.chart(MonitorPage::MemoryChart)->readout(0);
    QCOMPARE(memory.size(), 2);
    QVERIFY2(memory.first().contains(QStringLiteral("MiB")), qPrintable(memory.first()));
}

// 24 ranks: no 24-entry legend (it took the chart's room and most of its redraw time); the title
// gives the count and the crosshair still reads every rank. Two ranks keep their legend.
void tst_MonitorCharts::manyRanksReplaceTheLegendWithTheirCount()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261127-010000-many-0011"));
    QVERIFY(!run.isEmpty());
    const int ranks = 24;
    for (int rank = 0; rank < ranks; ++rank) {
        QByteArray lines;
        for (int step = 0; step <= 5; ++step)
            lines += metricsLine(rank, step, 3.0 + rank - step * 0.1);
        QVERIFY(appendText(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), lines));
    }
    MonitorPage page;
    page.resize(1200, 800);
    page.show();
    page.setRuns({run});
    auto *loss = page.chart(MonitorPage::LossChart);
    QTRY_COMPARE_WITH_TIMEOUT(graphPoints(loss, ranks - 1), 6, 5000);
    loss->replotNow();
    QCOMPARE(loss->plot()->legend->itemCount(), 0);
    QVERIFY2(loss->shownTitle().contains(QStringLiteral("25 curves: hover for values")), // 24 ranks and their mean
             qPrintable(loss->shownTitle()));
    QCOMPARE(loss->readout(3).size(), ranks);

    QTemporaryDir few;
    const QString two = makeRun(few.path(), QStringLiteral("20261127-010000-two-0012"));
    for (int rank = 0; rank < 2; ++rank)
        QVERIFY(appendText(two + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), metricsLine(rank, 1, 2.0)));
    page.setRuns({two});
    QTRY_COMPARE_WITH_TIMEOUT(graphPoints(loss, 1), 1, 5000);
    loss->replotNow();
    QCOMPARE(loss->plot()->legend->itemCount(), 3); // rank 0, rank 1, mean
    QCOMPARE(loss->shownTitle(), loss->title());
}

void tst_MonitorCharts::unitsOnAxesAndSmoothingOnlyForNoisyCharts()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-units-0011"));
    QVERIFY(!run.isEmpty());
    QByteArray lines;
    for (int step = 0; step < 30; ++step)
        lines += metricsLine(0, step, 2.0 + (step % 3));
    QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
    MonitorPage page;
    page.resize(1200, 800);
    page.show();
    page.setRuns({run});
    auto *memory = page.chart(MonitorPage::MemoryChart);
    QTRY_COMPARE_WITH_TIMEOUT(memory->rawPoints(), qint64(30), 5000);
    memory->replotNow();
    // 1e8 bytes: ticks in MiB, never raw bytes.
    const QList<QString> ticks = memory->plot()->yAxis->tickVectorLabels();
    QVERIFY(!ticks.isEmpty());
    for (const QString &tick : ticks)
        QVERIFY2(tick.endsWith(QStringLiteral(" MiB")), qPrintable(tick));
    QCOMPARE(memory->plot()->xAxis->label(), QStringLiteral("time since start (s)"));
    for (int chart = 0; chart < MonitorPage::ChartCount; ++chart)
        QVERIFY2(!page.chart(MonitorPage::Chart(chart))->plot()->yAxis->label().isEmpty(),
                 qPrintable(QString::number(chart)));
    QVERIFY(page.chart(MonitorPage::ThroughputChart)->plot()->yAxis->label().contains(QStringLiteral("/s")));
    // Smoothing draws averages on the loss, never on the learning rate.
    page.setSmoothing(0.2);
    auto *loss = page.chart(MonitorPage::LossChart);
    auto *lr = page.chart(MonitorPage::LrChart);
    loss->replotNow();
    lr->replotNow();
    QVERIFY(loss->isSmoothed());
    QVERIFY(!lr->isSmoothed());
    QCOMPARE(loss->plot()->graphCount(), 2); // raw (faint) and its average
    QCOMPARE(lr->plot()->graphCount(), 1);
    // A constant learning rate (0.001) fills the chart instead of a flat line at "0" between -1 and 1.
    QVERIFY2(lr->plot()->yAxis->range().lower > 0 && lr->plot()->yAxis->range().upper < 0.002,
             qPrintable(
                 QStringLiteral("%1..%2").arg(lr->plot()->yAxis->range().lower).arg(lr->plot()->yAxis->range().upper)));
    QVERIFY(loss->plot()->graph(0)->pen().color().alpha() < 255);
    QCOMPARE(lr->plot()->graph(0)->pen().color().alpha(), 255);
}

void tst_MonitorCharts::movingAverageIsDebiased()
{
    // Regression: the average started at the first value and lagged far behind a short run's
    // loss (a warm-up peak appeared to move). Debiased, a constant stays constant from the first
    // point and the second point weighs its share.
    const std::vector<double> constant = app::smoothed({4.0, 4.0, 4.0}, 0.1);
    for (const double v : constant)
        QCOMPARE(v, 4.0);
    const std::vector<double> two = app::smoothed({1.0, 3.0, std::nan("")}, 0.5);
    QCOMPARE(two[0], 1.0);
    QCOMPARE(two[1], (0.5 * 3.0 + 0.25 * 1.0) / 0.75);
    QVERIFY(std::isnan(two[2]));
}

void tst_MonitorCharts::gpuSamplesArePlottedPerRankAndPerGpu()
{
    // What the launcher's sampler writes on a host with NVML: per GPU utilisation and memory in the
    // host line, GPU memory of each rank's processes in the rank lines (docs/metrics.md).
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-gpu-0016"));
    QVERIFY(!run.isEmpty());
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const double start = QDateTime::currentMSecsSinceEpoch() / 1000.0 - 10;
    QByteArray lines;
    for (int i = 0; i < 10; ++i) {
        const QString time = QString::number(start + i * 0.5, 'f', 3);
        lines += QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":-1,\"kind\":\"system\",\"cpu_percent\":40,"
                                "\"mem_used_bytes\":6e9,\"mem_total_bytes\":1.6e10,\"load_1m\":1.5,"
                                "\"gpu0_util_percent\":%2,\"gpu0_mem_used_bytes\":%3,\"gpu0_mem_total_bytes\":%4,"
                                "\"gpu1_util_percent\":80,\"gpu1_mem_used_bytes\":%5,\"gpu1_mem_total_bytes\":%4}\n")
                     .arg(time)
                     .arg(50 + 10 * i)
                     .arg((4 + 0.5 * i) * gib, 0, 'f', 0)
                     .arg(16 * gib, 0, 'f', 0)
                     .arg(6 * gib, 0, 'f', 0)
                     .toUtf8();
        for (int rank = 0; rank < 2; ++rank)
            lines += QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":%2,\"kind\":\"system\",\"pid\":%3,"
                                    "\"cpu_percent\":95,\"mem_rss_bytes\":2e8,\"mem_device_bytes\":%4}\n")
                         .arg(time)
                         .arg(rank)
                         .arg(4242 + rank)
                         .arg((rank == 0 ? 1 + 0.25 * i : 3.0) * gib, 0, 'f', 0)
                         .toUtf8();
    }
    QVERIFY(appendText(run + QStringLiteral("/metrics/system.jsonl"), lines));
    MonitorPage page;
    page.resize(1200, 800);
    page.show();
    page.setRuns({run});
    auto *util = page.chart(MonitorPage::GpuUtilChart);
    auto *memory = page.chart(MonitorPage::GpuMemoryChart);
    QTRY_COMPARE_WITH_TIMEOUT(memory->rawPoints(), qint64(40), 5000);
    QTRY_COMPARE_WITH_TIMEOUT(util->rawPoints(), qint64(20), 5000);
    util->replotNow();
    memory->replotNow();
    QTRY_VERIFY(util->isVisible() && memory->isVisible());
    QVERIFY(!page.gpuNote()->isVisible());

    // Utilisation per GPU, in percent over seconds since the run's first sample.
    QCOMPARE(util->plot()->graphCount(), 2);
    QCOMPARE(util->plot()->graph(0)->name(), QStringLiteral("GPU 0"));
    QCOMPARE(util->plot()->graph(1)->name(), QStringLiteral("GPU 1"));
    QCOMPARE(util->plot()->graph(0)->data()->size(), 10);
    QCOMPARE(util->plot()->graph(0)->pen().style(), Qt::DashLine);
    QVERIFY2(util->plot()->yAxis->label().endsWith(QStringLiteral("(%)")), qPrintable(util->plot()->yAxis->label()));
    QCOMPARE(util->plot()->xAxis->label(), QStringLiteral("time since start (s)"));
    QCOMPARE(util->readout(1.0),
             (QStringList{QStringLiteral("GPU 0: 70.0 % (1.0 s)"), QStringLiteral("GPU 1: 80.0 % (1.0 s)")}));

    // Memory per rank (solid) beside each GPU's memory in use (dashed), in binary units.
    QCOMPARE(memory->plot()->graphCount(), 4);
    QCOMPARE(memory->plot()->graph(0)->name(), QStringLiteral("rank 0"));
    QCOMPARE(memory->plot()->graph(0)->pen().style(), Qt::SolidLine);
    QCOMPARE(memory->plot()->graph(2)->name(), QStringLiteral("GPU 0 (all processes)"));
    QCOMPARE(memory->readout(1.0),
             (QStringList{QStringLiteral("rank 0: 1.50 GiB (1.0 s)"), QStringLiteral("rank 1: 3.00 GiB (1.0 s)"),
                          QStringLiteral("GPU 0 (all processes): 5.00 GiB (1.0 s)"),
                          QStringLiteral("GPU 1 (all processes): 6.00 GiB (1.0 s)")}));
    for (const QString &tick : memory->plot()->yAxis->tickVectorLabels())
        QVERIFY2(tick.endsWith(QStringLiteral(" GiB")), qPrintable(tick));
    // The resident-memory chart keeps to host memory (it once took the GPU bytes when present).
    const QStringList resident = page.chart(MonitorPage::MemoryChart)->readout(1.0);
    QCOMPARE(resident.size(), 2);
    QVERIFY2(resident.first().startsWith(QStringLiteral("rank 0: 190.7 MiB")), qPrintable(resident.first()));

    // The CSV export carries the GPU series under their own names.
    const QString csvPath = root.filePath(QStringLiteral("gpu.csv"));
    QString error;
    QVERIFY2(page.exportCsv(MonitorPage::GpuUtilChart, csvPath, &error), qPrintable(error));
    QFile csv(csvPath);
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QStringList rows = QString::fromUtf8(csv.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(rows.size(), 21); // the header and 10 samples of each GPU
    QCOMPARE(rows.filter(QStringLiteral(",-1,gpu0_util_percent,,")).size(), 10);
    QCOMPARE(rows.filter(QStringLiteral(",-1,gpu1_util_percent,,")).size(), 10);
}

QTEST_MAIN(tst_MonitorCharts)
#include "tst_monitorcharts.moc"
