// The Monitor view on real run directories written by the test: metrics lines written on a
// timer show up as plot points and rank rows, logs filter by rank and text, events raise and
// clear banners, charts export as PNG and CSV, and long series are decimated to the plot width.
#include "app/studio/monitor/bannerbar.h"
#include "app/studio/monitor/eventstimeline.h"
#include "app/studio/monitor/logview.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "launcher/rundirectory.h"
#include "monitor/runevent.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QComboBox>
#include <QDateTime>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace accel;
using accel::app::MonitorPage;

namespace {

QString makeRun(const QString &root, const QString &id)
{
    const QString path = root + QLatin1Char('/') + id;
    auto run = launcher::RunDirectory::create(path);
    if (!run)
        return {};
    QJsonObject manifest{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                         {QStringLiteral("version"), 1},
                         {QStringLiteral("id"), id},
                         {QStringLiteral("name"), QStringLiteral("test")},
                         {QStringLiteral("created"), double(QDateTime::currentSecsSinceEpoch())},
                         {QStringLiteral("state"), QStringLiteral("running")}};
    if (!run->writeManifest(manifest))
        return {};
    return path;
}

bool appendText(const QString &path, const QByteArray &text)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Append))
        return false;
    return file.write(text) == text.size();
}

QByteArray metricsLine(int rank, int step, double loss)
{
    return QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":%2,\"step\":%3,\"loss\":%4,\"lr\":0.001,\"samples_per_s\":%5,"
                          "\"mem_rss_bytes\":%6,\"grad_norm\":%7}\n")
        .arg(QDateTime::currentMSecsSinceEpoch() / 1000.0, 0, 'f', 3)
        .arg(rank)
        .arg(step)
        .arg(loss)
        .arg(100 + rank)
        .arg(1e8 + step * 1000)
        .arg(1.0 / (step + 1))
        .toUtf8();
}

int graphPoints(const app::MetricPlot *plot, int graph)
{
    return graph < plot->plot()->graphCount() ? plot->plot()->graph(graph)->data()->size() : 0;
}

} // namespace

class tst_MonitorPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void metricsWrittenOnATimerAppear();
    void logsFilterByRankAndText();
    void eventsRaiseAndClearBanners();
    void exportsPngAndCsv();
    void longSeriesAreDecimatedAndSmoothed();
    void severalRunsOverlay();
};

void tst_MonitorPage::metricsWrittenOnATimerAppear()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-timer-0001"));
    QVERIFY(!run.isEmpty());
    MonitorPage page;
    page.resize(1200, 800);
    page.show();
    page.setRuns({run});
    QCOMPARE(page.runs().size(), 1);

    int step = 0;
    QTimer writer;
    connect(&writer, &QTimer::timeout, this, [&] {
        for (int rank = 0; rank < 2; ++rank)
            QVERIFY(appendText(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank),
                               metricsLine(rank, step, 3.0 - step * 0.01)));
        ++step;
    });
    writer.start(20);

    auto *loss = page.chart(MonitorPage::LossChart);
    // Two ranks and their mean.
    QTRY_VERIFY_WITH_TIMEOUT(loss->plot()->graphCount() == 3 && graphPoints(loss, 2) >= 5, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(page.ranksView()->model()->rowCount(), 2, 5000);
    QCOMPARE(page.ranksView()->model()->index(1, 0).data().toString(), QStringLiteral("1"));
    QVERIFY(graphPoints(page.chart(MonitorPage::LrChart), 0) > 0);
    QVERIFY(graphPoints(page.chart(MonitorPage::ThroughputChart), 1) > 0);
    QVERIFY(graphPoints(page.chart(MonitorPage::MemoryChart), 0) > 0);
    QVERIFY(graphPoints(page.chart(MonitorPage::GradNormChart), 0) > 0);
    writer.stop();
    const int written = step;
    // Every sample reaches the plot (few enough to draw undecimated) once the redraw ran.
    QTRY_COMPARE_WITH_TIMEOUT(graphPoints(loss, 0), written, 5000);
    QCOMPARE(loss->plot()->graph(0)->data()->at(written - 1)->key, double(written - 1));
    QCOMPARE(loss->plot()->graph(1)->data()->at(written - 1)->value, 3.0 - (written - 1) * 0.01);
    // The mean of identical losses is that loss.
    QCOMPARE(loss->plot()->graph(2)->data()->at(0)->value, 3.0);
    // Redraws are coalesced: far fewer than the samples that arrived.
    QVERIFY2(loss->replotCount() < written * 2,
             qPrintable(QStringLiteral("%1 redraws for %2 samples").arg(loss->replotCount()).arg(written * 2)));
}

void tst_MonitorPage::logsFilterByRankAndText()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-logs-0002"));
    QVERIFY(!run.isEmpty());
    QVERIFY(appendText(run + QStringLiteral("/logs/rank0.log"), "epoch 1 begins\nrank zero loss 2.5\n"));
    QVERIFY(appendText(run + QStringLiteral("/logs/rank1.log"), "epoch 1 begins\nrank one Warning: slow disk\n"));
    MonitorPage page;
    page.setRuns({run});
    auto *logs = page.logView();
    QTRY_COMPARE_WITH_TIMEOUT(logs->filterModel()->rowCount(), 4, 5000);
    QTRY_COMPARE(logs->rankCombo()->count(), 3); // all, rank 0, rank 1
    logs->rankCombo()->setCurrentIndex(logs->rankCombo()->findData(1));
    QCOMPARE(logs->filterModel()->rowCount(), 2);
    logs->searchField()->setText(QStringLiteral("warning"));
    QCOMPARE(logs->filterModel()->rowCount(), 1);
    QVERIFY(logs->filterModel()
                ->index(0, monitor::LogModel::TextColumn)
                .data()
                .toString()
                .contains(QStringLiteral("slow disk")));
    logs->rankCombo()->setCurrentIndex(0);
    logs->searchField()->setText(QStringLiteral("EPOCH"));
    QCOMPARE(logs->filterModel()->rowCount(), 2);
    // New lines arrive live and pass the filter.
    QVERIFY(appendText(run + QStringLiteral("/logs/rank0.log"), "epoch 2 begins\n"));
    QTRY_COMPARE_WITH_TIMEOUT(logs->filterModel()->rowCount(), 3, 5000);
}

void tst_MonitorPage::eventsRaiseAndClearBanners()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-events-0003"));
    QVERIFY(!run.isEmpty());
    MonitorPage page;
    page.setRuns({run});
    const QString events = run + QStringLiteral("/events.jsonl");
    auto event = [](const QString &name, int rank, QJsonObject fields) {
        monitor::RunEvent e;
        e.time = QDateTime::currentMSecsSinceEpoch() / 1000.0;
        e.event = name;
        e.rank = rank;
        e.fields = fields;
        return e;
    };
    QVERIFY(monitor::appendEventLine(
        events, event(QStringLiteral("hang_suspected"), -1,
                      {{QStringLiteral("seconds_without_progress"), 75}, {QStringLiteral("threshold_s"), 60}})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 1, 5000);
    QVERIFY(page.banners()->messages().first().contains(QStringLiteral("hung")));
    QVERIFY(monitor::appendEventLine(
        events, event(QStringLiteral("straggler_detected"), 1,
                      {{QStringLiteral("step_time_s"), 0.9}, {QStringLiteral("others_median_step_time_s"), 0.3}})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 2, 5000);
    QVERIFY(monitor::appendEventLine(events, event(QStringLiteral("hang_cleared"), -1, {})));
    QVERIFY(monitor::appendEventLine(events, event(QStringLiteral("straggler_cleared"), 1, {})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 0, 5000);
    QVERIFY(monitor::appendEventLine(events, event(QStringLiteral("rank_exited"), 1,
                                                   {{QStringLiteral("exit_code"), 3},
                                                    {QStringLiteral("signal"), 0},
                                                    {QStringLiteral("result"), QStringLiteral("exit 3")}})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 1, 5000);
    QVERIFY(page.banners()->messages().first().contains(QStringLiteral("rank 1 failed: exit 3")));
    // The events timeline lists all five, errors coloured.
    QTRY_COMPARE(page.eventsView()->model()->rowCount(), 5);
    QVERIFY(page.eventsView()->model()->index(4, 0).data(Qt::BackgroundRole).isValid());
}

void tst_MonitorPage::exportsPngAndCsv()
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

void tst_MonitorPage::longSeriesAreDecimatedAndSmoothed()
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

    page.setSmoothing(0.05);
    loss->replotNow();
    highest = 0;
    for (auto it = loss->plot()->graph(0)->data()->constBegin(); it != loss->plot()->graph(0)->data()->constEnd(); ++it)
        highest = std::max(highest, it->value);
    QVERIFY2(highest < 10.0 && highest > 1.0, qPrintable(QString::number(highest)));
}

void tst_MonitorPage::severalRunsOverlay()
{
    QTemporaryDir root;
    const QString a = makeRun(root.path(), QStringLiteral("20261122-010000-a-0006"));
    const QString b = makeRun(root.path(), QStringLiteral("20261122-010001-b-0007"));
    QVERIFY(!a.isEmpty() && !b.isEmpty());
    QVERIFY(appendText(a + QStringLiteral("/metrics/rank0.jsonl"), metricsLine(0, 1, 2.0) + metricsLine(0, 2, 1.5)));
    QVERIFY(appendText(b + QStringLiteral("/metrics/rank0.jsonl"), metricsLine(0, 1, 3.0)));
    QVERIFY(appendText(b + QStringLiteral("/metrics/rank1.jsonl"), metricsLine(1, 1, 3.0)));
    MonitorPage page;
    page.setRuns({a, b});
    auto *loss = page.chart(MonitorPage::LossChart);
    QCOMPARE(loss->storeCount(), 2);
    // a: rank 0; b: ranks 0, 1 and their mean.
    QTRY_COMPARE_WITH_TIMEOUT(loss->plot()->graphCount(), 4, 5000);
    QVERIFY(loss->plot()->graph(0)->name().contains(QStringLiteral("-a-")));
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

QTEST_MAIN(tst_MonitorPage)
#include "tst_monitorpage.moc"
