// The Monitor view on real run directories written by the test: metrics lines written on a
// timer show up as plot points and rank rows, logs filter by rank and text, events raise and
// clear banners, a run's end shows as it ended, and progress and triage read the run's files
// (the charts themselves: tst_monitorcharts).
#include "app/studio/monitor/bannerbar.h"
#include "app/studio/monitor/eventstimeline.h"
#include "app/studio/monitor/logview.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runstatuspanel.h"

#include "tests/app/monitorpagesupport.h"

#include <QComboBox>
#include <QFrame>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace accel;
using namespace accel::test::monitorpage;
using accel::app::MonitorPage;

class tst_MonitorPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The Monitor keeps its x axis, smoothing and panel layouts in the settings: each case starts clean.
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_monitorpage"));
    }
    void init() { QSettings().clear(); }
    void metricsWrittenOnATimerAppear();
    void logsFilterByRankAndText();
    void eventsRaiseAndClearBanners();
    void stoppedRunShowsAsStoppedNotFailed();
    void missingModuleShowsTriageCardWithItsLine();
    void scriptWithoutMetricsNamesTheTracker();
    void progressShowsStepOfMaxStepsAndEta();
    void switchingToAFinishedRunKeepsItsBanners();
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
    // Two ranks and their mean, then the moving averages of those three drawn over them.
    QTRY_VERIFY_WITH_TIMEOUT(loss->plot()->graphCount() == 6 && graphPoints(loss, 2) >= 5, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(page.ranksView()->model()->rowCount(), 2, 5000);
    QCOMPARE(page.ranksView()->model()->index(1, 0).data().toString(), QStringLiteral("1"));
    // The columns fit what the ranks show, not only their titles (the run was chosen empty).
    const QAbstractItemModel *ranks = page.ranksView()->model();
    const QFontMetrics metrics(page.ranksView()->font());
    for (int column = 0; column + 1 < ranks->columnCount(); ++column) {
        for (int row = 0; row < ranks->rowCount(); ++row) {
            const QString text = ranks->index(row, column).data().toString();
            QVERIFY2(page.ranksView()->columnWidth(column) > metrics.horizontalAdvance(text),
                     qPrintable(QStringLiteral("column %1 cuts '%2'").arg(column).arg(text)));
        }
    }
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
    QVERIFY(monitor::appendEventLine(
        events, makeEvent(QStringLiteral("hang_suspected"), -1,
                          {{QStringLiteral("seconds_without_progress"), 75}, {QStringLiteral("threshold_s"), 60}})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 1, 5000);
    QVERIFY(page.banners()->messages().first().contains(QStringLiteral("hung")));
    QVERIFY(monitor::appendEventLine(
        events, makeEvent(QStringLiteral("straggler_detected"), 1,
                          {{QStringLiteral("step_time_s"), 0.9}, {QStringLiteral("others_median_step_time_s"), 0.3}})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 2, 5000);
    QVERIFY(monitor::appendEventLine(events, makeEvent(QStringLiteral("hang_cleared"), -1, {})));
    QVERIFY(monitor::appendEventLine(events, makeEvent(QStringLiteral("straggler_cleared"), 1, {})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 0, 5000);
    QVERIFY(monitor::appendEventLine(events, makeEvent(QStringLiteral("rank_exited"), 1,
                                                       {{QStringLiteral("exit_code"), 3},
                                                        {QStringLiteral("signal"), 0},
                                                        {QStringLiteral("result"), QStringLiteral("exit 3")}})));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 1, 5000);
    QVERIFY(page.banners()->messages().first().contains(QStringLiteral("rank 1 failed: exit 3")));
    // The events timeline lists all five, errors coloured, details in words rather than JSON.
    QTRY_COMPARE(page.eventsView()->model()->rowCount(), 5);
    QVERIFY(page.eventsView()->model()->index(4, 0).data(Qt::BackgroundRole).isValid());
    const QString details = page.eventsView()->model()->index(0, monitor::EventsModel::DetailsColumn).data().toString();
    QCOMPARE(details, QStringLiteral("seconds without progress 75 · threshold 60 s"));
}

void tst_MonitorPage::stoppedRunShowsAsStoppedNotFailed()
{
    // Regression: pressing Stop showed red "rank N failed: signal 15 (SIGTERM)" banners.
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-stopped-0008"));
    QVERIFY(!run.isEmpty());
    MonitorPage page;
    page.show();
    page.setRuns({run});
    const QString reason = QStringLiteral("supervisor received SIGINT");
    QList<monitor::RunEvent> events = {
        makeEvent(QStringLiteral("rank_started"), 0, {}), makeEvent(QStringLiteral("rank_started"), 1, {}),
        makeEvent(QStringLiteral("stopping_ranks"), -1, {{QStringLiteral("reason"), reason}})};
    for (int rank = 0; rank < 2; ++rank) {
        events.append(makeEvent(QStringLiteral("rank_exited"), rank,
                                {{QStringLiteral("exit_code"), 143},
                                 {QStringLiteral("signal"), 15},
                                 {QStringLiteral("result"), QStringLiteral("signal 15 (SIGTERM)")}}));
    }
    events.append(makeEvent(QStringLiteral("finished"), -1,
                            {{QStringLiteral("state"), QStringLiteral("stopped")},
                             {QStringLiteral("exit_code"), 130},
                             {QStringLiteral("reason"), reason}}));
    QVERIFY(endRun(run, events, QStringLiteral("stopped"), reason));
    QTRY_COMPARE_WITH_TIMEOUT(page.statusPanel()->state(), QStringLiteral("stopped"), 5000);
    QVERIFY(page.statusPanel()->stateText().startsWith(QStringLiteral("Stopped")));
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 1, 5000);
    QVERIFY2(page.banners()->messages().first().contains(QStringLiteral("was stopped")),
             qPrintable(page.banners()->messages().first()));
    for (const QString &message : page.banners()->messages())
        QVERIFY2(!message.contains(QStringLiteral("fail")), qPrintable(message));
    QVERIFY(!page.statusPanel()->isTriageShown());
}

void tst_MonitorPage::missingModuleShowsTriageCardWithItsLine()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-nomodule-0009"));
    QVERIFY(!run.isEmpty());
    // Many lines after the error: it must not matter that it scrolled out of a log pane.
    QByteArray log = "starting\nTraceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                     "    import nosuchmodule_xyz.sub\nModuleNotFoundError: No module named 'nosuchmodule_xyz'\n";
    for (int i = 0; i < 50; ++i)
        log += "cleanup line " + QByteArray::number(i) + "\n";
    QVERIFY(appendText(run + QStringLiteral("/logs/rank0.log"), log));
    MonitorPage page;
    page.resize(1024, 700);
    page.show();
    page.setRuns({run});
    QVERIFY(endRun(run,
                   {makeEvent(QStringLiteral("rank_exited"), 0,
                              {{QStringLiteral("exit_code"), 1},
                               {QStringLiteral("signal"), 0},
                               {QStringLiteral("result"), QStringLiteral("exit 1")}}),
                    makeEvent(QStringLiteral("finished"), -1,
                              {{QStringLiteral("state"), QStringLiteral("failed")},
                               {QStringLiteral("exit_code"), 1},
                               {QStringLiteral("reason"), QStringLiteral("rank 0 exit 1")}})},
                   QStringLiteral("failed"), QStringLiteral("rank 0 exit 1")));
    QTRY_VERIFY_WITH_TIMEOUT(page.statusPanel()->isTriageShown(), 5000);
    QTRY_COMPARE_WITH_TIMEOUT(page.statusPanel()->triage().errorLine,
                              QStringLiteral("[rank 0] ModuleNotFoundError: No module named 'nosuchmodule_xyz'"), 5000);
    QCOMPARE(page.statusPanel()->triage().title, QStringLiteral("Missing Python module 'nosuchmodule_xyz'"));
    QVERIFY(page.statusPanel()->triage().fix.contains(QStringLiteral("pip install nosuchmodule_xyz")));
    auto *card = page.findChild<QFrame *>(QStringLiteral("triageCard"));
    QVERIFY(card && card->isVisible());
    QVERIFY(page.statusPanel()->stateText().startsWith(QStringLiteral("Failed")));
}

void tst_MonitorPage::scriptWithoutMetricsNamesTheTracker()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-plain-0012"));
    QVERIFY(!run.isEmpty());
    // Only the supervisor's system samples: a plain script that logs nothing.
    QByteArray lines;
    const double start = QDateTime::currentMSecsSinceEpoch() / 1000.0 - 10;
    for (int i = 0; i < 10; ++i) {
        lines += QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":0,\"kind\":\"system\",\"pid\":42,\"cpu_percent\":%2,"
                                "\"mem_rss_bytes\":%3}\n")
                     .arg(start + i * 0.5, 0, 'f', 3)
                     .arg(90 + i)
                     .arg(2.0e8 + i * 1e6)
                     .toUtf8();
    }
    QVERIFY(appendText(run + QStringLiteral("/metrics/system.jsonl"), lines));
    MonitorPage page;
    page.resize(1200, 800);
    page.show();
    page.setRuns({run});
    QTRY_VERIFY_WITH_TIMEOUT(page.statusPanel()->isHintShown(), 5000);
    QVERIFY(page.statusPanel()->hintText().contains(QStringLiteral("from accel_studio_tracker import log")));
    QVERIFY(page.statusPanel()->hintText().contains(QStringLiteral("accel_studio_tracker.py")));
    // The CPU and memory the launcher sampled are plotted per rank; the empty training charts give way.
    auto *cpu = page.chart(MonitorPage::CpuChart);
    QTRY_COMPARE_WITH_TIMEOUT(graphPoints(cpu, 0), 10, 5000);
    QCOMPARE(cpu->plot()->graph(0)->data()->at(9)->key, 4.5); // seconds since the first sample
    // The charts are laid out on the event loop's turns after the samples arrive.
    QTRY_VERIFY(!page.chart(MonitorPage::LossChart)->isVisible());
    QTRY_VERIFY(page.chart(MonitorPage::MemoryChart)->isVisible());
    // No GPU fields in the samples: the GPU charts give way too, and a line says why.
    QTRY_VERIFY(!page.chart(MonitorPage::GpuUtilChart)->isVisible());
    QTRY_VERIFY(!page.chart(MonitorPage::GpuMemoryChart)->isVisible());
    QTRY_VERIFY(page.gpuNote()->isVisible());
    QVERIFY(page.gpuNote()->text().contains(QStringLiteral("No GPU samples")));
}

void tst_MonitorPage::progressShowsStepOfMaxStepsAndEta()
{
    QTemporaryDir root;
    const QString run = makeRun(root.path(), QStringLiteral("20261122-010000-progress-0013"));
    QVERIFY(!run.isEmpty());
    QVERIFY(appendText(run + QStringLiteral("/job.yaml"), "recipe: mlp\ntraining:\n  max_steps: 200\n"));
    QByteArray lines;
    for (int step = 1; step <= 50; ++step)
        lines += QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":0,\"step\":%2,\"loss\":1.0,\"step_time_s\":0.5}\n")
                     .arg(1763771234.0 + step * 0.5, 0, 'f', 3)
                     .arg(step)
                     .toUtf8();
    QVERIFY(appendText(run + QStringLiteral("/metrics/rank0.jsonl"), lines));
    MonitorPage page;
    page.show();
    page.setRuns({run});
    QTRY_VERIFY_WITH_TIMEOUT(page.statusPanel()->progressText().contains(QStringLiteral("step 50 of 200 (25 %)")),
                             5000);
    QCOMPARE(page.statusPanel()->maxSteps(), 200);
    QVERIFY2(page.statusPanel()->progressText().contains(QStringLiteral("0.5 s/step")),
             qPrintable(page.statusPanel()->progressText()));
    QVERIFY2(page.statusPanel()->progressText().contains(QStringLiteral("ETA 1 min 15 s")),
             qPrintable(page.statusPanel()->progressText()));
}

void tst_MonitorPage::switchingToAFinishedRunKeepsItsBanners()
{
    // Regression: choosing another run cleared every banner after the new run's events had been
    // read, so a finished run (no more events to come) never showed its failure.
    QTemporaryDir root;
    const QString a = makeRun(root.path(), QStringLiteral("20261122-010000-first-0014"));
    const QString b = makeRun(root.path(), QStringLiteral("20261122-010000-second-0015"));
    QVERIFY(!a.isEmpty() && !b.isEmpty());
    QVERIFY(endRun(b,
                   {makeEvent(QStringLiteral("rank_exited"), 1,
                              {{QStringLiteral("exit_code"), 3},
                               {QStringLiteral("signal"), 0},
                               {QStringLiteral("result"), QStringLiteral("exit 3")}})},
                   QStringLiteral("failed"), QStringLiteral("rank 1 exit 3")));
    MonitorPage page;
    page.setRuns({a});
    page.setRuns({b});
    QTRY_COMPARE_WITH_TIMEOUT(page.banners()->messages().size(), 1, 5000);
    QVERIFY2(page.banners()->messages().first().contains(QStringLiteral("second: rank 1 failed: exit 3")),
             qPrintable(page.banners()->messages().first()));
}

QTEST_MAIN(tst_MonitorPage)
#include "tst_monitorpage.moc"
