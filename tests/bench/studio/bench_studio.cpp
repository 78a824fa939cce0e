// Render time of one Monitor chart (MetricPlot) holding a 1,000,000-point loss series, 1600 px
// wide, offscreen: decimation to the pixel width + QCustomPlot replot + render into a QPixmap.
// The peer is the same chart drawn from all 1M points (no decimation). Prints BENCH lines. Also
// the Runs page opening a runs root of thousands of finished runs.
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/runspage.h"
#include "monitor/decimation.h"
#include "monitor/metricstore.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPixmap>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace accel;

namespace {

constexpr int kPoints = 1000000;
constexpr int kWidth = 1600;
constexpr int kHeight = 400;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

void fillStore(monitor::MetricStore &store)
{
    monitor::MetricBatch batch;
    batch.source = QStringLiteral("metrics/rank0.jsonl");
    batch.names = {QByteArray("loss")};
    batch.rows.reserve(kPoints);
    batch.values.reserve(kPoints);
    for (int i = 0; i < kPoints; ++i) {
        monitor::MetricRow row;
        row.time = 1763771234.0 + i * 0.01;
        row.rank = 0;
        row.step = i;
        row.firstValue = std::uint32_t(batch.values.size());
        row.valueCount = 1;
        batch.rows.push_back(row);
        const double noise = std::sin(i * 0.37) * 0.2 + ((i % 9973) == 0 ? 3.0 : 0.0);
        batch.values.push_back({0, 4.0 * std::exp(-i / 300000.0) + noise});
    }
    store.append(batch);
}

} // namespace

class bench_Studio : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void renderMillionPoints();
    void runsPageOpensManyRuns_data();
    void runsPageOpensManyRuns();
};

void bench_Studio::renderMillionPoints()
{
    monitor::MetricStore store;
    fillStore(store);
    QCOMPARE(store.series(0, QStringLiteral("loss"))->size(), size_t(kPoints));

    app::MetricPlot chart(QStringLiteral("Loss"), {QStringLiteral("loss")}, true);
    chart.resize(kWidth, kHeight);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.addStore(&store, QStringLiteral("bench"), Qt::blue);
    chart.replotNow(); // warm-up (layout, fonts)
    const int pixels = chart.plot()->axisRect()->width();

    const int runs = 15;
    std::vector<double> decimated;
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer timer;
        timer.start();
        chart.replotNow();
        const QPixmap pixmap = chart.plot()->toPixmap(kWidth, kHeight);
        decimated.push_back(timer.nsecsElapsed() / 1e6);
        QVERIFY(!pixmap.isNull());
    }
    const qint64 drawn = chart.drawnPoints();
    QVERIFY(drawn <= 2 * pixels + 2);
    QVERIFY(chart.rawPoints() == kPoints);

    // Peer: the same QCustomPlot chart fed every point (what a plot without decimation draws).
    const auto *series = store.series(0, QStringLiteral("loss"));
    QVector<double> x(series->steps.begin(), series->steps.end());
    QVector<double> y(series->values.begin(), series->values.end());
    auto *graph = chart.plot()->graph(0);
    std::vector<double> full;
    for (int i = 0; i < 5; ++i) {
        QElapsedTimer timer;
        timer.start();
        graph->setData(x, y, true);
        chart.plot()->replot();
        const QPixmap pixmap = chart.plot()->toPixmap(kWidth, kHeight);
        full.push_back(timer.nsecsElapsed() / 1e6);
        QVERIFY(!pixmap.isNull());
    }
    QCOMPARE(graph->data()->size(), kPoints);

    // Decimation alone, for the record.
    std::vector<double> decimateOnly;
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer timer;
        timer.start();
        auto points = monitor::decimate(*series, 0, kPoints - 1, pixels);
        decimateOnly.push_back(timer.nsecsElapsed() / 1e6);
        QVERIFY(points.x.size() <= 2 * pixels + 2);
    }

    // The Monitor's loss chart as it opens: smoothed, the moving average drawn over the raw curve.
    app::ChartSpec spec;
    spec.title = QStringLiteral("Loss");
    spec.names = {QStringLiteral("loss")};
    spec.withMean = true;
    spec.smoothable = true;
    spec.valueLabel = QStringLiteral("loss");
    app::MetricPlot smoothedChart(spec);
    smoothedChart.resize(kWidth, kHeight);
    smoothedChart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&smoothedChart));
    smoothedChart.addStore(&store, QStringLiteral("bench"), Qt::blue);
    smoothedChart.setSmoothing(0.9); // W&B direction: the average keeps 0.9 of itself
    smoothedChart.replotNow();
    QCOMPARE(smoothedChart.plot()->graphCount(), 2);
    std::vector<double> smoothedTimes;
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer timer;
        timer.start();
        smoothedChart.replotNow();
        const QPixmap pixmap = smoothedChart.plot()->toPixmap(kWidth, kHeight);
        smoothedTimes.push_back(timer.nsecsElapsed() / 1e6);
        QVERIFY(!pixmap.isNull());
    }

    const double d = median(decimated);
    const double f = median(full);
    std::printf("BENCH studio.render_1M_points_1600px %.2f ms peer=%.2f ratio=%.1f target=<=20ms "
                "(decimate+replot+toPixmap, median of %d; peer: undecimated, median of 5)\n",
                d, f, f / d, runs);
    std::printf(
        "BENCH studio.render_1M_points_1600px_smoothed %.2f ms target=<=20ms (raw + moving average, median of %d)\n",
        median(smoothedTimes), runs);
    std::printf("BENCH studio.decimate_1M_points %.2f ms (to %d px columns)\n", median(decimateOnly), pixels);
    std::printf("BENCH studio.drawn_points %lld points (of %d)\n", static_cast<long long>(drawn), kPoints);
    std::fflush(stdout);
}

// The Runs page opening a runs root of N finished runs (the studio reads it at start): seconds
// from setRunsRoot to the table holding every row, columns fitted. Issue 33 item 13 measured the
// whole studio's start at 5.8 s / 17.5 s / 43.5 s / 77.8 s for 500 / 1000 / 2000 / 3000 runs.
void bench_Studio::runsPageOpensManyRuns_data()
{
    QTest::addColumn<int>("runs");
    for (int runs : {500, 1000, 2000, 3000})
        QTest::newRow(qPrintable(QString::number(runs))) << runs;
}

void bench_Studio::runsPageOpensManyRuns()
{
    QFETCH(int, runs);
    QTemporaryDir root;
    for (int i = 0; i < runs; ++i) {
        const QString folder =
            root.filePath(QStringLiteral("20261128-%1-run-%2").arg(i, 6, 10, QLatin1Char('0')).arg(i));
        QDir().mkpath(folder);
        QFile file(folder + QStringLiteral("/run.json"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(QJsonObject{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                                             {QStringLiteral("version"), 1},
                                             {QStringLiteral("name"), QStringLiteral("run%1").arg(i % 37)},
                                             {QStringLiteral("created"), 1763771234.0 + i * 60},
                                             {QStringLiteral("state"), QStringLiteral("succeeded")}})
                       .toJson());
    }
    QElapsedTimer timer;
    timer.start();
    app::RunsPage page;
    page.resize(kWidth, kHeight);
    page.show();
    page.setRunsRoot(root.path());
    QCoreApplication::processEvents();
    const double seconds = timer.nsecsElapsed() / 1e9;
    const QTableView *table = page.runsView();
    QVERIFY(table && table->model());
    QCOMPARE(table->model()->rowCount(), runs);
    std::printf("runs page, %d finished runs: %.2f s\n", runs, seconds);
}

QTEST_MAIN(bench_Studio)
#include "bench_studio.moc"
