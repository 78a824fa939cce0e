#include "monitor/decimation.h"
#include "monitor/derivedseries.h"
#include "monitor/metricsparser.h"
#include "monitor/metricstore.h"

#include <QSignalSpy>
#include <QtTest>

#include <random>

using namespace accel::monitor;

namespace {

QByteArray line(int rank, int step, double time, const QByteArray &rest)
{
    return QByteArray("{\"v\":1,\"time\":") + QByteArray::number(time, 'f', 3) +
           ",\"rank\":" + QByteArray::number(rank) + ",\"step\":" + QByteArray::number(step) +
           (rest.isEmpty() ? "" : "," + rest) + "}\n";
}

void feed(MetricStore &store, const QByteArray &text)
{
    MetricsParser parser;
    MetricBatch batch;
    parser.feed(text, batch);
    store.append(batch);
}

} // namespace

class tst_MetricStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void storesColumnsPerRankAndName()
    {
        MetricStore store;
        QSignalSpy added(&store, &MetricStore::ranksAdded);
        QSignalSpy appended(&store, &MetricStore::samplesAppended);
        QByteArray text;
        for (int step = 1; step <= 5; ++step) {
            text += line(0, step, 100 + step, "\"loss\":" + QByteArray::number(3.0 - step * 0.1));
            text += line(1, step, 100 + step * 1.5, "\"loss\":" + QByteArray::number(3.1 - step * 0.1));
        }
        text += "{\"v\":1,\"time\":105,\"rank\":-1,\"kind\":\"system\",\"cpu_percent\":50}\n";
        text += line(0, 5, 106, "\"kind\":\"eval\",\"loss\":2.0");
        feed(store, text);
        QCOMPARE(store.ranks(), (QList<int>{-1, 0, 1}));
        QCOMPARE(added.size(), 1);
        QCOMPARE(added.at(0).at(0).value<QList<int>>(), (QList<int>{-1, 0, 1}));
        QCOMPARE(appended.size(), 1);
        const Series *loss = store.series(0, QStringLiteral("loss"));
        QVERIFY(loss);
        QCOMPARE(loss->size(), size_t(5));
        QCOMPARE(loss->steps.back(), 5.0);
        QCOMPARE(loss->values.front(), 2.9);
        QCOMPARE(store.lastValue(0, QStringLiteral("eval_loss")), 2.0);
        QCOMPARE(store.scalarNames(0), (QStringList{QStringLiteral("loss"), QStringLiteral("eval_loss")}));
        QVERIFY(std::isnan(store.series(-1, QStringLiteral("cpu_percent"))->steps[0]));
        QCOMPARE(store.rankStatus(1).lastStep, std::int64_t(5));
        QCOMPARE(store.totalSamples(), std::int64_t(12));
        QVERIFY(store.lastProgressMs() > 0);
    }

    // The Monitor makes a panel per logged key: the store names every key once, as it first comes,
    // tells the supervisor's system readings from what the ranks logged, and keeps "eval/" keys.
    void namesAreAnnouncedOnceAndSystemNamesAreTold()
    {
        MetricStore store;
        QSignalSpy names(&store, &MetricStore::namesAdded);
        QVERIFY(std::isnan(store.firstTime())); // before any sample
        feed(store, line(0, 1, 50, "\"loss\":2,\"train/acc\":0.5") +
                        "{\"v\":1,\"time\":40,\"rank\":0,\"kind\":\"system\",\"pid\":7,\"cpu_percent\":90}\n");
        QCOMPARE(names.size(), 1);
        QCOMPARE(names.at(0).at(0).toStringList(), (QStringList{QStringLiteral("loss"), QStringLiteral("train/acc"),
                                                                QStringLiteral("pid"), QStringLiteral("cpu_percent")}));
        QCOMPARE(store.firstTime(), 40.0);
        QVERIFY(store.isSystemName(QStringLiteral("pid")));
        QVERIFY(!store.isSystemName(QStringLiteral("loss")));
        // The same keys again: nothing new. A script that logs cpu_percent itself makes it its own.
        feed(store, line(0, 2, 51, "\"loss\":1.5,\"cpu_percent\":10"));
        QCOMPARE(names.size(), 1);
        QVERIFY(!store.isSystemName(QStringLiteral("cpu_percent")));
        feed(store, line(0, 2, 52, "\"kind\":\"eval\",\"eval/accuracy\":0.7,\"loss\":1.2"));
        QCOMPARE(names.size(), 2);
        QCOMPARE(names.at(1).at(0).toStringList(),
                 (QStringList{QStringLiteral("eval/accuracy"), QStringLiteral("eval_loss")}));
        QCOMPARE(store.allScalarNames().size(), 6);
        // After clear() the names come again with their samples.
        store.clear();
        QVERIFY(store.allScalarNames().isEmpty());
        feed(store, line(0, 3, 60, "\"loss\":1"));
        QCOMPARE(names.size(), 3);
        QCOMPARE(names.at(2).at(0).toStringList(), QStringList{QStringLiteral("loss")});
    }

    void stepTimesFromTimestampsOrLoggedValue()
    {
        MetricStore store;
        feed(store, line(0, 10, 100.0, "\"loss\":1") + line(0, 12, 101.0, "\"loss\":1") +
                        line(0, 12, 101.5, "\"lr\":1") + line(0, 13, 103.0, "\"step_time_s\":0.75") +
                        line(0, 5, 200.0, "\"loss\":1") + line(0, 6, 201.0, "\"loss\":1"));
        const Series *times = store.stepTimes(0);
        QVERIFY(times);
        // 10->12 over 1 s: 0.5 s/step; 12->13 uses the logged value; restart at 5, then 5->6: 1 s.
        QCOMPARE(times->values, (std::vector<double>{0.5, 0.75, 1.0}));
        QCOMPARE(store.rankStatus(0).lastStep, std::int64_t(6));
        QVERIFY(!store.series(0, QStringLiteral("loss"))->stepsSorted);
    }

    // The runtime writes its memory line of a step just before the step's loss line: the step
    // time that line logs replaces the one its time gap stood in for; a logged one is never replaced.
    void loggedStepTimeReplacesTheGapOfAnEarlierLineOfTheStep()
    {
        MetricStore store;
        feed(store, line(0, 0, 100.0, "\"mem_params_bytes\":8") + line(0, 0, 100.1, "\"loss\":2") +
                        line(0, 1, 104.0, "\"mem_grads_bytes\":8") +
                        line(0, 1, 104.1, "\"loss\":1.9,\"step_time_s\":0.25") +
                        line(0, 2, 104.4, "\"loss\":1.8,\"step_time_s\":0.3") +
                        line(0, 2, 104.5, "\"lr\":1,\"step_time_s\":9"));
        const Series *times = store.stepTimes(0);
        QVERIFY(times);
        QCOMPARE(times->values, (std::vector<double>{0.25, 0.3}));
        QCOMPARE(times->steps, (std::vector<double>{1, 2}));
    }

    void decimationKeepsExtremaAndBoundsPoints()
    {
        Series series;
        std::mt19937 random(7);
        std::normal_distribution<double> noise(0.0, 1.0);
        const int count = 1000000;
        series.reserve(count);
        for (int i = 0; i < count; ++i)
            series.append(i, 1000.0 + i, noise(random));
        series.values[123457] = 1000.0;  // a spike
        series.values[876543] = -1000.0; // a dip
        series.values[500000] = std::nan("");
        for (int width : {1, 7, 800, 1920}) {
            const DecimatedSeries d = decimate(series, 0, count - 1, width);
            QVERIFY2(d.x.size() <= 2 * width + 2, qPrintable(QString::number(d.x.size())));
            QCOMPARE(d.x.size(), d.y.size());
            QCOMPARE(*std::max_element(d.y.begin(), d.y.end()), 1000.0);
            QCOMPARE(*std::min_element(d.y.begin(), d.y.end()), -1000.0);
            QVERIFY(std::is_sorted(d.x.begin(), d.x.end()));
        }
        // A window: points inside plus one neighbour each side.
        const DecimatedSeries window = decimate(series, 100, 109.5, 800);
        QCOMPARE(window.x.size(), 12);
        QCOMPARE(window.x.front(), 99.0);
        QCOMPARE(window.x.back(), 110.0);
        // Time axis works the same way.
        const DecimatedSeries byTime = decimate(series, 1000.0 + 123000, 1000.0 + 124000, 10, XAxis::Time);
        QVERIFY(byTime.y.contains(1000.0));
        QVERIFY(byTime.x.size() <= 22);
    }

    void decimationOfUnsortedSeries()
    {
        Series series;
        for (int i = 0; i < 100; ++i)
            series.append(i, i, i == 50 ? 99.0 : 1.0);
        for (int i = 40; i < 100; ++i) // restarted at step 40
            series.append(i, 100 + i, i == 60 ? -99.0 : 2.0);
        QVERIFY(!series.stepsSorted);
        const DecimatedSeries d = decimate(series, 0, 99, 10);
        QVERIFY(d.x.size() <= 22);
        QVERIFY(d.y.contains(99.0));
        QVERIFY(d.y.contains(-99.0));
    }

    void emptyAndDegenerateInputs()
    {
        Series series;
        QCOMPARE(decimate(series, 0, 10, 100).x.size(), 0);
        series.append(1, 1, 1);
        QCOMPARE(decimate(series, 0, 10, 0).x.size(), 0);
        QCOMPARE(decimate(series, 0, 10, 100).x.size(), 1);
        QCOMPARE(decimate(series, 1, 1, 100).x.size(), 1);
    }

    void throughputGlobalSumAndScalingEfficiency()
    {
        MetricStore baseline;
        QByteArray text;
        for (int step = 1; step <= 10; ++step)
            text += line(0, step, step, "\"samples_per_s\":" + QByteArray(step == 1 ? "10" : "100"));
        feed(baseline, text);

        MetricStore run;
        text.clear();
        for (int step = 1; step <= 10; ++step) {
            for (int rank = 0; rank < 4; ++rank)
                text += line(rank, step, step, "\"samples_per_s\":90");
        }
        text += line(0, 11, 11, "\"samples_per_s\":90"); // step 11 only on rank 0: not yet global
        feed(run, text);

        const Series global = globalSum(run, QStringLiteral("samples_per_s"));
        QCOMPARE(global.size(), size_t(10));
        QCOMPARE(global.values.back(), 360.0);

        const auto efficiency = scalingEfficiency(run, baseline);
        QVERIFY(efficiency.has_value());
        QCOMPARE(efficiency->runWorldSize, 4);
        QCOMPARE(efficiency->baselineWorldSize, 1);
        QCOMPARE(efficiency->baselineThroughput, 100.0);
        QCOMPARE(efficiency->runThroughput, 360.0);
        QCOMPARE(efficiency->efficiency, 0.9);

        MetricStore empty;
        QVERIFY(!scalingEfficiency(run, empty).has_value());
    }

    void throughputFromCounter()
    {
        MetricStore store;
        feed(store,
             line(0, 1, 10, "\"tokens\":0") + line(0, 2, 12, "\"tokens\":2048") + line(0, 3, 13, "\"tokens\":4096"));
        const Series rate = throughput(store, 0, QStringLiteral("tokens_per_s"));
        QCOMPARE(rate.values, (std::vector<double>{1024.0, 2048.0}));
        QCOMPARE(median({3.0, 1.0, std::nan(""), 2.0, 10.0}), 2.5);
    }
};

QTEST_GUILESS_MAIN(tst_MetricStore)
#include "tst_metricstore.moc"
