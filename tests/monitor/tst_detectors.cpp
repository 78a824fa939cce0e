#include "monitor/derivedseries.h"
#include "monitor/detectors.h"
#include "monitor/metricsparser.h"
#include "monitor/rundirectoryfollower.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <random>

using namespace accel::monitor;

namespace {

void appendTo(const QString &path, const QByteArray &bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Append));
    QCOMPARE(file.write(bytes), bytes.size());
}

QByteArray line(int rank, int step, const QByteArray &extra = {})
{
    return "{\"v\":1,\"time\":" + QByteArray::number(QDateTime::currentMSecsSinceEpoch() / 1000.0, 'f', 3) +
           ",\"rank\":" + QByteArray::number(rank) + ",\"step\":" + QByteArray::number(step) + ",\"loss\":1.0" + extra +
           "}\n";
}

// A run directory with a follower feeding a store, and the events read back from events.jsonl.
struct Run {
    QTemporaryDir dir;
    MetricStore store;
    RunDirectoryFollower follower{dir.path()};
    QList<RunEvent> events;

    Run()
    {
        QDir(dir.path()).mkpath(QStringLiteral("metrics"));
        follower.setPollInterval(20);
        QObject::connect(&follower, &RunSource::metricsReceived, &store, &MetricStore::append);
        QObject::connect(&follower, &RunSource::eventsReceived, &store,
                         [this](const QList<RunEvent> &e) { events += e; });
        follower.start();
    }
    QString metricsFile(int rank) const { return dir.filePath(QStringLiteral("metrics/rank%1.jsonl").arg(rank)); }
    QStringList eventNames() const
    {
        QStringList names;
        for (const RunEvent &event : events)
            names.append(event.event);
        return names;
    }
};

// The per-rank metrics lines a healthy 2-rank run of the gpt recipe wrote (accel launch --cpu
// --num_processes 2, log_every 1, 400 steps of ~2 ms; tests/data/monitor/healthy-2rank).
QList<QByteArrayList> recordedHealthyRun()
{
    QList<QByteArrayList> ranks;
    for (int rank = 0; rank < 2; ++rank) {
        QFile file(qEnvironmentVariable("ACCEL_SOURCE_DIR") +
                   QStringLiteral("/tests/data/monitor/healthy-2rank/rank%1.jsonl").arg(rank));
        if (!file.open(QIODevice::ReadOnly))
            return {};
        ranks.append(file.readAll().split('\n'));
        ranks.last().removeAll(QByteArray());
    }
    return ranks;
}

// Feeds the ranks' lines to the store a few steps at a time, as a follower polling a live run does
// (every rank's lines of those steps in one batch), and returns the detector's events in order.
QStringList feedRecorded(const QList<QByteArrayList> &ranks, MetricStore &store, StragglerDetector &detector)
{
    QStringList events;
    const auto record = [&events](const RunEvent &event) {
        events.append(event.event + QLatin1Char(' ') + QString::number(event.rank));
    };
    QObject::connect(&detector, &StragglerDetector::stragglerDetected, &detector, record);
    QObject::connect(&detector, &StragglerDetector::stragglerCleared, &detector, record);
    MetricsParser parser;
    const qsizetype steps = std::min(ranks.at(0).size(), ranks.at(1).size());
    for (qsizetype from = 0; from < steps; from += 3) {
        QByteArray text;
        for (const QByteArrayList &lines : ranks) {
            for (qsizetype i = from; i < std::min(from + 3, steps); ++i)
                text += lines.at(i) + '\n';
        }
        MetricBatch batch;
        parser.feed(text, batch);
        store.append(batch);
    }
    return events;
}

} // namespace

class tst_Detectors : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void eventWriterNeverFollowsASymlink()
    {
        // The detectors write events.jsonl as the supervisor does (core/rundir): a symlink planted
        // in the run folder is never written through.
        QTemporaryDir run;
        QTemporaryDir elsewhere;
        const QString target = elsewhere.filePath(QStringLiteral("target"));
        QVERIFY(QFile::link(target, run.filePath(QStringLiteral("events.jsonl"))));
        RunEvent event;
        event.time = 1;
        event.event = QStringLiteral("hang_suspected");
        QVERIFY(!appendEventLine(run.filePath(QStringLiteral("events.jsonl")), event));
        eventsFileWriter(run.path())(event);
        QVERIFY(!QFile::exists(target));
        QVERIFY(QFile::remove(run.filePath(QStringLiteral("events.jsonl"))));
        QVERIFY(appendEventLine(run.filePath(QStringLiteral("events.jsonl")), event));
        QFile written(run.filePath(QStringLiteral("events.jsonl")));
        QVERIFY(written.open(QIODevice::ReadOnly));
        QCOMPARE(written.readAll(), QByteArray("{\"v\":1,\"time\":1.000,\"event\":\"hang_suspected\"}\n"));
    }

    void hangIsSuspectedAfterStepsStopAndClearedWhenTheyResume()
    {
        Run run;
        HangDetector detector(&run.store);
        detector.setSettings({400, 5.0, 25});
        detector.setEventWriter(eventsFileWriter(run.dir.path()));
        QSignalSpy suspected(&detector, &HangDetector::hangSuspected);
        QSignalSpy cleared(&detector, &HangDetector::hangCleared);
        detector.start();

        // Two ranks step every 30 ms for a while: no hang.
        int step = 0;
        QTimer writer;
        writer.setInterval(30);
        connect(&writer, &QTimer::timeout, this, [&] {
            ++step;
            appendTo(run.metricsFile(0), line(0, step));
            appendTo(run.metricsFile(1), line(1, step));
        });
        writer.start();
        QTest::qWait(700);
        QCOMPARE(suspected.size(), 0);
        QVERIFY(run.store.rankStatus(1).lastStep > 5);
        QCOMPARE(detector.thresholdMs(), std::int64_t(400)); // 5 x ~30 ms is below the minimum

        // The job stops stepping while its processes live on.
        QElapsedTimer stopped;
        writer.stop();
        stopped.start();
        QTRY_COMPARE_WITH_TIMEOUT(suspected.size(), 1, 5000);
        QVERIFY(stopped.elapsed() >= 350);
        const RunEvent event = suspected.at(0).at(0).value<RunEvent>();
        QCOMPARE(event.event, QStringLiteral("hang_suspected"));
        QVERIFY(event.fields.value(QLatin1String("seconds_without_progress")).toDouble() >= 0.4);
        QCOMPARE(event.fields.value(QLatin1String("last_steps")).toObject().value(QLatin1String("1")).toInt(), step);
        QVERIFY(detector.isHangSuspected());
        // Raised once, not on every check.
        QTest::qWait(200);
        QCOMPARE(suspected.size(), 1);
        // And written to events.jsonl, which the follower reads back like the launcher's events.
        QTRY_VERIFY_WITH_TIMEOUT(run.eventNames().contains(QStringLiteral("hang_suspected")), 3000);

        // Steps resume.
        writer.start();
        QTRY_COMPARE_WITH_TIMEOUT(cleared.size(), 1, 3000);
        QVERIFY(!detector.isHangSuspected());
        QTRY_VERIFY_WITH_TIMEOUT(run.eventNames().contains(QStringLiteral("hang_cleared")), 3000);
        writer.stop();
    }

    void thresholdFollowsMedianStepTime()
    {
        Run run;
        for (int step = 1; step <= 5; ++step)
            appendTo(run.metricsFile(0), line(0, step, ",\"step_time_s\":0.3"));
        run.follower.pollNow();
        HangDetector detector(&run.store);
        detector.setSettings({100, 5.0, 25});
        QCOMPARE(detector.thresholdMs(), std::int64_t(1500));
        QSignalSpy suspected(&detector, &HangDetector::hangSuspected);
        detector.start();
        QTest::qWait(600);
        QCOMPARE(suspected.size(), 0); // 5 x 0.3 s not yet reached
        QTRY_COMPARE_WITH_TIMEOUT(suspected.size(), 1, 5000);
    }

    void finishedRunNeverHangs()
    {
        Run run;
        appendTo(run.metricsFile(0), line(0, 1));
        appendTo(run.dir.filePath(QStringLiteral("events.jsonl")), "{\"v\":1,\"time\":1,\"event\":\"finished\"}\n");
        run.follower.pollNow();
        HangDetector detector(&run.store);
        detector.setSettings({100, 5.0, 20});
        detector.observeEvents(run.events);
        QSignalSpy suspected(&detector, &HangDetector::hangSuspected);
        detector.start();
        QTest::qWait(400);
        QCOMPARE(suspected.size(), 0);
        // A restart makes it live again.
        detector.observeEvents({RunEvent{0, QStringLiteral("restarted"), -1, {}, {}}});
        QTRY_COMPARE_WITH_TIMEOUT(suspected.size(), 1, 3000);
    }

    void noHangBeforeTheFirstStepWhenRequired()
    {
        Run run; // no metrics at all: a script that logs none
        HangDetector detector(&run.store);
        HangSettings settings{100, 5.0, 20};
        settings.requireFirstStep = true;
        detector.setSettings(settings);
        QSignalSpy suspected(&detector, &HangDetector::hangSuspected);
        detector.start();
        QTest::qWait(400);
        QCOMPARE(suspected.size(), 0);
        appendTo(run.metricsFile(0), line(0, 1)); // one step, then nothing: now it can hang
        QTRY_COMPARE_WITH_TIMEOUT(suspected.size(), 1, 3000);
    }

    // Many ranks and few (both parities of "the others"), step times drawn at random with a few
    // slow ranks coming and going: after every batch the detector's stragglers are exactly the
    // ranks whose windowed median exceeds the median of the other ranks' medians by the margin,
    // computed here from the definition.
    void manyRanksFollowTheDefinition_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::newRow("64 ranks") << 64;
        QTest::newRow("63 ranks") << 63;
        QTest::newRow("5 ranks") << 5;
        QTest::newRow("4 ranks") << 4;
    }
    void manyRanksFollowTheDefinition()
    {
        QFETCH(int, ranks);
        StragglerSettings settings{0.2, 6, 3};
        settings.minimumGapS = 0.0; // only the margins (with their hysteresis), judged at once
        settings.persistSteps = 1;
        MetricStore store;
        StragglerDetector detector(&store);
        detector.setSettings(settings);
        std::mt19937 random(20261127u + static_cast<unsigned>(ranks));
        std::uniform_real_distribution<double> jitter(0.95, 1.05);
        std::vector<std::vector<double>> times(static_cast<size_t>(ranks));
        int flips = 0;
        QList<int> previous;
        for (int step = 1; step <= 60; ++step) {
            QByteArray text;
            for (int rank = 0; rank < ranks; ++rank) {
                // Two ranks are slow in some phases; a third sits right at the margin.
                const bool slow = (rank == 1 && step > 10 && step < 35) || (rank == ranks - 2 && step > 25);
                const double base = rank == ranks / 2 ? 0.12 : 0.10;
                const double seconds = base * (slow ? 1.5 : 1.0) * jitter(random);
                if (step > 1) // the store times steps from the second one on
                    times[static_cast<size_t>(rank)].push_back(seconds);
                text += "{\"v\":1,\"time\":" + QByteArray::number(1000.0 + step, 'f', 3) +
                        ",\"rank\":" + QByteArray::number(rank) + ",\"step\":" + QByteArray::number(step) +
                        ",\"loss\":1.0,\"step_time_s\":" + QByteArray::number(seconds, 'g', 17) + "}\n";
            }
            MetricsParser parser;
            MetricBatch batch;
            parser.feed(text, batch);
            store.append(batch); // the detector evaluates on samplesAppended

            std::vector<double> medians;
            for (const auto &series : times) {
                if (series.size() < static_cast<size_t>(settings.minimumSteps))
                    continue;
                const auto from = series.end() - std::min<std::ptrdiff_t>(settings.window, series.size());
                medians.push_back(median(std::vector<double>(from, series.end())));
            }
            QList<int> expected = previous;
            if (medians.size() >= 2) {
                expected.clear();
                for (size_t rank = 0; rank < medians.size(); ++rank) {
                    std::vector<double> others = medians;
                    others.erase(others.begin() + static_cast<std::ptrdiff_t>(rank));
                    const double margin =
                        previous.contains(static_cast<int>(rank)) ? settings.clearMargin : settings.margin;
                    if (medians[rank] > median(others) * (1.0 + margin))
                        expected.append(static_cast<int>(rank));
                }
            }
            QCOMPARE(detector.stragglers(), expected);
            flips += expected != previous ? 1 : 0;
            previous = expected;
        }
        QVERIFY2(flips >= 3, "the scenario must make ranks become and stop being stragglers");
    }

    void slowRankIsAStraggler()
    {
        Run run;
        StragglerDetector detector(&run.store);
        detector.setSettings({0.2, 5, 3});
        detector.setEventWriter(eventsFileWriter(run.dir.path()));
        QSignalSpy detected(&detector, &StragglerDetector::stragglerDetected);
        QSignalSpy cleared(&detector, &StragglerDetector::stragglerCleared);

        // Ranks 0-2 take 0.10 s per step; rank 3 takes 0.15 s (50 % slower); rank 2 is 10 % slower
        // (within the margin).
        int step = 0;
        double slowTime = 0.15;
        QTimer writer;
        writer.setInterval(15);
        connect(&writer, &QTimer::timeout, this, [&] {
            ++step;
            for (int rank = 0; rank < 4; ++rank) {
                const double seconds = rank == 3 ? slowTime : rank == 2 ? 0.11 : 0.10;
                appendTo(run.metricsFile(rank), line(rank, step, ",\"step_time_s\":" + QByteArray::number(seconds)));
            }
        });
        writer.start();
        QTRY_COMPARE_WITH_TIMEOUT(detected.size(), 1, 5000);
        const RunEvent event = detected.at(0).at(0).value<RunEvent>();
        QCOMPARE(event.rank, 3);
        QCOMPARE(event.event, QStringLiteral("straggler_detected"));
        QCOMPARE(event.fields.value(QLatin1String("step_time_s")).toDouble(), 0.15);
        // The others' median is 0.10 once every rank is read (0.105 / 0.11 while some files lag).
        const double others = event.fields.value(QLatin1String("others_median_step_time_s")).toDouble();
        QVERIFY2(others >= 0.1 && others <= 0.11, qPrintable(QString::number(others)));
        QCOMPARE(detector.stragglers(), QList<int>{3});

        // Rank 3 recovers: once its window is fast again, the straggler clears.
        slowTime = 0.10;
        QTRY_COMPARE_WITH_TIMEOUT(cleared.size(), 1, 5000);
        writer.stop();
        QVERIFY(detector.stragglers().isEmpty());
        QCOMPARE(detected.size(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(run.eventNames().contains(QStringLiteral("straggler_cleared")), 3000);
        QCOMPARE(run.events.first().rank, 3);
    }
    // A healthy run flapped around the margin: ~2 ms steps whose 20-step medians differ by
    // 10-30 % between the two ranks gave 64 events in 400 steps (issue: 130 in 9.7 s).
    void healthyRecordedRunRaisesNoStragglerEvent()
    {
        const QList<QByteArrayList> ranks = recordedHealthyRun();
        QCOMPARE(ranks.size(), 2);
        QCOMPARE(ranks.at(1).size(), 400);
        MetricStore store;
        StragglerDetector detector(&store);
        QCOMPARE(feedRecorded(ranks, store, detector), QStringList());
        QCOMPARE(store.rankStatus(1).lastStep, std::int64_t(400));
    }

    // The same run with rank 1 30 ms slower per step in two episodes (steps 101-180 and 261-340):
    // one detected and one cleared event per episode, for rank 1 only.
    void realStragglerGivesOneEventPerEpisode()
    {
        QList<QByteArrayList> ranks = recordedHealthyRun();
        QCOMPARE(ranks.size(), 2);
        for (QByteArray &line : ranks[1]) {
            QJsonObject object = QJsonDocument::fromJson(line).object();
            const int step = object.value(QLatin1String("step")).toInt();
            if ((step > 100 && step <= 180) || (step > 260 && step <= 340))
                object.insert(QStringLiteral("step_time_s"),
                              object.value(QLatin1String("step_time_s")).toDouble() + 0.03);
            line = QJsonDocument(object).toJson(QJsonDocument::Compact);
        }
        MetricStore store;
        StragglerDetector detector(&store);
        const QStringList expected = {QStringLiteral("straggler_detected 1"), QStringLiteral("straggler_cleared 1"),
                                      QStringLiteral("straggler_detected 1"), QStringLiteral("straggler_cleared 1")};
        QCOMPARE(feedRecorded(ranks, store, detector), expected);
    }
};

QTEST_GUILESS_MAIN(tst_Detectors)
#include "tst_detectors.moc"
